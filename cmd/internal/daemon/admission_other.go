//go:build !unix

package daemon

import "os/exec"

// configureChild leaves the child as exec makes it: killed when its
// context ends.
func configureChild(*exec.Cmd) {}

// limitSelf does nothing where the OS has no resource limits.
func limitSelf(uint64, uint64) error { return nil }

// cpuLimited reports false: no CPU limit is set.
func cpuLimited(*exec.ExitError, uint64) bool { return false }
