//go:build unix

package daemon

import (
	"errors"
	"os/exec"
	"syscall"
	"time"
)

// configureChild puts the compile child in a process group of its own,
// killed as a whole when its context ends, and dead with the daemon where
// the OS allows (childProcAttr).
func configureChild(cmd *exec.Cmd) {
	cmd.SysProcAttr = childProcAttr()
	cmd.Cancel = func() error {
		if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return cmd.Process.Kill()
		}
		return nil
	}
	cmd.WaitDelay = 2 * time.Second
}

// limitSelf bounds the growth of the calling process's address space to
// maxMemory bytes past what it has reserved already (the Go runtime
// reserves over a GiB of address space it never touches), and its CPU time
// to cpuSeconds (SIGXCPU, which Go ignores, then SIGKILL a second later);
// zero leaves a limit as it is.
func limitSelf(maxMemory, cpuSeconds uint64) error {
	preferOOMKill()
	if maxMemory > 0 {
		as := reservedAddressSpace() + maxMemory
		if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: as, Max: as}); err != nil {
			return err
		}
	}
	if cpuSeconds > 0 {
		if err := syscall.Setrlimit(syscall.RLIMIT_CPU, &syscall.Rlimit{Cur: cpuSeconds, Max: cpuSeconds + 1}); err != nil {
			return err
		}
	}
	return nil
}

// cpuLimited reports whether a child ended by the signals of its CPU
// limit of cpuSeconds: SIGXCPU, or SIGKILL after using that much CPU (a
// SIGKILL before is someone else's, the OOM killer's for one).
func cpuLimited(ee *exec.ExitError, cpuSeconds uint64) bool {
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return false
	}
	used := ee.UserTime() + ee.SystemTime()
	return ws.Signal() == syscall.SIGXCPU || (ws.Signal() == syscall.SIGKILL && used >= time.Duration(cpuSeconds)*time.Second-500*time.Millisecond)
}
