package daemon

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// sizeUnits are the units a byte count may carry, longest first.
var sizeUnits = []struct {
	suffix string
	factor int64
}{
	{"GiB", 1 << 30},
	{"MiB", 1 << 20},
	{"KiB", 1 << 10},
	{"GB", 1e9},
	{"MB", 1e6},
	{"KB", 1e3},
	{"G", 1 << 30},
	{"M", 1 << 20},
	{"K", 1 << 10},
	{"B", 1},
}

// ParseSize reads a positive byte count: a whole number with an optional
// unit (B, K/KiB, M/MiB, G/GiB as powers of 1024; KB, MB, GB as powers of
// 1000).
func ParseSize(s string) (int64, error) {
	n, err := parseSizeOrZero(s)
	if err == nil && n == 0 {
		err = fmt.Errorf("invalid size %q (use e.g. 64MiB, 1GiB or a byte count)", s)
	}
	return n, err
}

// parseSizeOrZero is ParseSize that also takes 0.
func parseSizeOrZero(s string) (int64, error) {
	num, factor := strings.TrimSpace(s), int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(num, u.suffix) {
			num, factor = strings.TrimSpace(strings.TrimSuffix(num, u.suffix)), u.factor
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/factor {
		return 0, fmt.Errorf("invalid size %q (use e.g. 64MiB, 1GiB or a byte count)", s)
	}
	return n * factor, nil
}

// formatSize writes a byte count in the largest binary unit that divides
// it.
func formatSize(n int64) string {
	for _, u := range sizeUnits[:3] {
		if n != 0 && n%u.factor == 0 {
			return strconv.FormatInt(n/u.factor, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

// sizeValue is a flag of a byte count that takes units: --memory-budget
// 8GiB.
type sizeValue[T int | int64] struct{ p *T }

func (v sizeValue[T]) String() string {
	if v.p == nil {
		return "0"
	}
	return formatSize(int64(*v.p))
}

func (v sizeValue[T]) Set(s string) error {
	n, err := parseSizeOrZero(s)
	if err != nil {
		return err
	}
	if int64(T(n)) != n {
		return fmt.Errorf("size %q is too large", s)
	}
	*v.p = T(n)
	return nil
}

func (v sizeValue[T]) Type() string { return "size" }

// SizeVar defines a byte-count flag with units on f, with default def.
func SizeVar[T int | int64](f *pflag.FlagSet, p *T, name string, def T, usage string) {
	*p = def
	f.Var(sizeValue[T]{p}, name, usage)
}
