//go:build unix

package daemon

import "syscall"

// privateUmask makes every file and directory the process creates from now
// on private to its user (0600 and 0700 at most), whatever umask it was
// started with.
func privateUmask() { syscall.Umask(0o077) }
