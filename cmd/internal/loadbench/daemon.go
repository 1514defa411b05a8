package loadbench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

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

// startDaemon runs the daemon in this process and returns once it
// listens; the daemon's error logs go to logw.
func startDaemon(ctx context.Context, cfg Config, logw io.Writer) (*inProcessDaemon, error) {
	d := &inProcessDaemon{logw: logw}
	dir := cfg.DataDir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "weft-bench-load-")
		if err != nil {
			return nil, fmt.Errorf("data directory: %w", err)
		}
		dir, d.tmp = tmp, tmp
	}
	d.dir = dir
	// The daemon's defaults are those of `weft serve`.
	scfg, err := daemon.ParseFlags([]string{
		"--data", dir, "--addr", "127.0.0.1:0", "--log-level", "error",
		"--workers", strconv.Itoa(cfg.Workers), "--synchronous", cfg.Synchronous,
	})
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
	token, err := os.ReadFile(filepath.Join(dir, daemon.AdminTokenFile))
	if err != nil {
		d.stop()
		return nil, fmt.Errorf("read admin token: %w", err)
	}
	d.token = strings.TrimSpace(string(token))
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
