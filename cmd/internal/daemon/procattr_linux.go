package daemon

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// childProcAttr gives the compile child its own process group and has the
// kernel kill it when the daemon dies.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// reservedAddressSpace is the address space the process holds now
// (VmSize), or 2 GiB when it cannot be read.
func reservedAddressSpace() uint64 {
	status, err := os.ReadFile("/proc/self/status")
	if err == nil {
		for line := range bytes.Lines(status) {
			if rest, ok := bytes.CutPrefix(line, []byte("VmSize:")); ok {
				kb, err := strconv.ParseUint(string(bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(rest), []byte("kB")))), 10, 64)
				if err == nil {
					return kb << 10
				}
			}
		}
	}
	return 2 << 30
}

// preferOOMKill makes the process the kernel's first choice when memory
// runs out, so the compile child goes before the daemon.
func preferOOMKill() { _ = os.WriteFile("/proc/self/oom_score_adj", []byte("1000"), 0) }
