//go:build !unix

package sqlite_test

import "time"

// cpuTime is unknown here; the CPU metrics read 0.
func cpuTime() time.Duration { return 0 }
