//go:build unix && !linux

package daemon

import "syscall"

// childProcAttr gives the compile child its own process group.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// reservedAddressSpace is a generous estimate of the address space a Go
// process reserves at start.
func reservedAddressSpace() uint64 { return 4 << 30 }

// preferOOMKill does nothing: only Linux has an OOM score.
func preferOOMKill() {}
