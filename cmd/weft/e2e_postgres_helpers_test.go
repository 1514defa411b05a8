//go:build unix

package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store/postgres/pgtest"
)

// postgresServer returns the DSN of the test server (pgtest.ServerEnv, a
// superuser the tests create their databases and roles with), or skips tb.
func postgresServer(tb testing.TB) string {
	tb.Helper()
	return pgtest.Server(tb)
}

// MustOwnedDatabase creates, on the test server, a login role without
// superuser rights and a database it owns, as docs/operations.md tells an
// operator to, and returns the DSN that connects as that role. Both are
// dropped when tb ends.
func MustOwnedDatabase(tb testing.TB) string {
	tb.Helper()
	admin := postgresServer(tb)
	suffix := pgtest.RandomName("")
	role, name := "weft_owner_"+suffix, "weft_e2e_"+suffix
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, admin)
	require.NoError(tb, err, "connect to %s=%s", pgtest.ServerEnv, admin)
	defer func() { _ = conn.Close(ctx) }()
	for _, q := range []string{
		"CREATE ROLE " + role + " LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE",
		"CREATE DATABASE " + name + " OWNER " + role,
	} {
		_, err := conn.Exec(ctx, q)
		require.NoError(tb, err, q)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			tb.Errorf("drop database %s: %v", name, err)
			return
		}
		defer func() { _ = conn.Close(ctx) }()
		for _, q := range []string{"DROP DATABASE IF EXISTS " + name + " WITH (FORCE)", "DROP ROLE IF EXISTS " + role} {
			if _, err := conn.Exec(ctx, q); err != nil {
				tb.Errorf("%s: %v", q, err)
			}
		}
	})
	u, err := url.Parse(admin)
	require.NoError(tb, err)
	u.Path = "/" + name
	u.User = url.User(role)
	dsn := u.String()

	// The role is what the daemon runs as: no superuser.
	c, err := pgx.Connect(ctx, dsn)
	require.NoError(tb, err)
	defer func() { _ = c.Close(ctx) }()
	var super bool
	require.NoError(tb, c.QueryRow(ctx, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user").Scan(&super))
	require.False(tb, super)
	return dsn
}

// MustRunHosts starts n `weft serve` processes on the database dsn with
// one shared --modules directory, each on its own data directory, named
// host-1 … host-n (--host-id), with extra serve arguments args. The first
// creates the admin client (and its admin.token) on the new database; the
// others are started once it listens, with that token copied into their
// data directories, as docs/operations.md says.
func MustRunHosts(tb testing.TB, n int, dsn string, args ...string) []*Daemon {
	tb.Helper()
	modules := tb.TempDir()
	hosts := make([]*Daemon, n)
	for i := range hosts {
		a := append([]string{"--store", dsn, "--modules", modules, "--host-id", fmt.Sprintf("host-%d", i+1)}, args...)
		d := newDaemon(tb, a...)
		if i > 0 {
			copyAdminToken(tb, hosts[0], d)
		}
		d.start()
		hosts[i] = d
	}
	return hosts
}

// MustJoinHost starts one more `weft serve` on the database of first, with
// its --modules directory and admin token, as host id.
func MustJoinHost(tb testing.TB, first *Daemon, dsn, id string, args ...string) *Daemon {
	tb.Helper()
	modules := ""
	for i, a := range first.Args {
		if a == "--modules" && i+1 < len(first.Args) {
			modules = first.Args[i+1]
		}
	}
	require.NotEmpty(tb, modules, "the first host has no --modules")
	d := newDaemon(tb, append([]string{"--store", dsn, "--modules", modules, "--host-id", id}, args...)...)
	copyAdminToken(tb, first, d)
	d.start()
	return d
}

// copyAdminToken writes the admin token of from into the data directory
// of to.
func copyAdminToken(tb testing.TB, from, to *Daemon) {
	tb.Helper()
	token, err := os.ReadFile(filepath.Join(from.DataDir, adminTokenFile))
	require.NoError(tb, err)
	require.NoError(tb, os.WriteFile(filepath.Join(to.DataDir, adminTokenFile), token, 0o600))
}

// HostID is the --host-id the daemon was started with.
func (d *Daemon) HostID() string {
	for i, a := range d.Args {
		if a == "--host-id" && i+1 < len(d.Args) {
			return d.Args[i+1]
		}
	}
	return ""
}

// Freeze stops the process with SIGSTOP, as a host frozen by its
// hypervisor or cut off from the network stops making progress; Thaw
// resumes it.
func (d *Daemon) Freeze() {
	d.tb.Helper()
	require.True(d.tb, d.running(), "daemon not running")
	require.NoError(d.tb, d.cmd.Process.Signal(syscall.SIGSTOP))
}

// Thaw resumes a process Freeze stopped.
func (d *Daemon) Thaw() {
	d.tb.Helper()
	require.NoError(d.tb, d.cmd.Process.Signal(syscall.SIGCONT))
}

// LogText returns what the current process has logged so far.
func (d *Daemon) LogText() string {
	data, err := os.ReadFile(filepath.Join(d.logDir, fmt.Sprintf("daemon-%d.log", d.starts)))
	if err != nil {
		return ""
	}
	return string(data)
}

// MustWaitLog polls the current process's log until it contains substr.
func (d *Daemon) MustWaitLog(substr string, timeout time.Duration) {
	d.tb.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(d.LogText(), substr) {
		if time.Now().After(deadline) {
			d.tb.Fatalf("the log of %s has no %q after %s", d.HostID(), substr, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
