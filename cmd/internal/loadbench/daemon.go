package loadbench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/weft-run/weft/cmd/internal/daemon"
)

// inProcessDaemon is a daemon started by Run in this process.
type inProcessDaemon struct {
	dir   string
	addr  string
	token string
	main  *daemon.Main
	tmp   string
	logw  io.Writer
}

// startDaemons runs cfg.Hosts daemons in this process and returns once
// they listen: one on SQLite under cfg.DataDir, or as many as asked on the
// PostgreSQL database cfg.Store, sharing a module directory and the first
// host's admin token (as the hosts of one database do).
func startDaemons(ctx context.Context, cfg Config, logw io.Writer) ([]*inProcessDaemon, func(), error) {
	var ds []*inProcessDaemon
	var modules string
	stop := func() {
		for _, d := range ds {
			d.stop()
		}
		if modules != "" {
			_ = os.RemoveAll(modules)
		}
	}
	var extra []string
	if cfg.Store != "" {
		dir, err := os.MkdirTemp("", "weft-bench-modules-")
		if err != nil {
			return nil, nil, fmt.Errorf("module directory: %w", err)
		}
		modules = dir
		extra = []string{"--store", cfg.Store, "--modules", modules}
	}
	for i := range cfg.Hosts {
		args := extra
		token := ""
		if cfg.Store != "" {
			args = append(slices.Clip(args), "--host-id", fmt.Sprintf("bench-%d", i+1))
		}
		if i > 0 {
			token = ds[0].token
		}
		d, err := startDaemon(ctx, cfg, i, token, args, logw)
		if err != nil {
			stop()
			return nil, nil, err
		}
		ds = append(ds, d)
	}
	return ds, stop, nil
}

// startDaemon runs daemon i in this process with the extra flags args
// and returns once it listens; the daemon's error logs go to logw. A
// token, when given, is written as its admin token before it starts.
func startDaemon(ctx context.Context, cfg Config, i int, token string, args []string, logw io.Writer) (*inProcessDaemon, error) {
	d := &inProcessDaemon{logw: logw}
	dir := cfg.DataDir
	if i > 0 {
		dir = "" // the other hosts of a database have data directories of their own
	}
	if dir == "" {
		tmp, err := os.MkdirTemp("", "weft-bench-load-")
		if err != nil {
			return nil, fmt.Errorf("data directory: %w", err)
		}
		dir, d.tmp = tmp, tmp
	}
	d.dir = dir
	if token != "" {
		if err := os.WriteFile(filepath.Join(dir, daemon.AdminTokenFile), []byte(token+"\n"), 0o600); err != nil {
			d.removeTmp()
			return nil, fmt.Errorf("admin token: %w", err)
		}
	}
	// The daemon's defaults are those of `weft serve`.
	scfg, err := daemon.ParseFlags(append([]string{
		"--data", dir, "--addr", "127.0.0.1:0", "--log-level", "error",
		"--workers", strconv.Itoa(cfg.Workers), "--synchronous", cfg.Synchronous,
	}, args...))
	if err != nil {
		d.removeTmp()
		return nil, fmt.Errorf("start daemon: %w", err)
	}
	scfg.CompileBin = cfg.CompileBin
	d.main = daemon.New(scfg, io.Discard, logw)
	if err := d.main.Run(ctx); err != nil {
		d.removeTmp()
		return nil, fmt.Errorf("start daemon: %w", err)
	}
	d.addr = d.main.Addr()
	written, err := os.ReadFile(filepath.Join(dir, daemon.AdminTokenFile))
	if err != nil {
		d.stop()
		return nil, fmt.Errorf("read admin token: %w", err)
	}
	d.token = strings.TrimSpace(string(written))
	return d, nil
}

// stop shuts the daemon down and removes a temporary data directory.
func (d *inProcessDaemon) stop() {
	_ = d.main.Close(context.Background()) // each close error is logged
	if err := d.main.Wait(); err != nil {
		fmt.Fprintf(d.logw, "daemon stopped: %v\n", err)
	}
	d.removeTmp()
}

func (d *inProcessDaemon) removeTmp() {
	if d.tmp != "" {
		_ = os.RemoveAll(d.tmp)
		d.tmp = ""
	}
}

// postgresDurable reports whether the server of dsn syncs its commits to
// disk: fsync and synchronous_commit on.
func postgresDurable(ctx context.Context, dsn string) (bool, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return false, fmt.Errorf("store: %w", err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	var fsync, syncCommit string
	if err := conn.QueryRow(ctx, "SELECT current_setting('fsync'), current_setting('synchronous_commit')").Scan(&fsync, &syncCommit); err != nil {
		return false, fmt.Errorf("store: %w", err)
	}
	return fsync == "on" && syncCommit == "on", nil
}
