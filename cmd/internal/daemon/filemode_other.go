//go:build !unix

package daemon

// privateUmask does nothing where there is no umask.
func privateUmask() {}
