package codec

// Limits bounds what a decoder accepts from untrusted input. The zero value
// of each field means its default; DefaultLimits holds the defaults.
type Limits struct {
	// MaxDepth is the deepest nesting of lists and maps a value may have: a
	// scalar has depth 0, a list of scalars depth 1, a list of such lists
	// depth 2. Deeper values fail with payload_limit_exceeded. Zero or
	// negative means the default. Defaults to 64.
	MaxDepth int
	// MaxSize is the largest frame (or bare datum) in bytes a decoder
	// accepts; larger input fails with payload_limit_exceeded. Zero or
	// negative means the default. Defaults to 16 MiB.
	MaxSize int
}

// DefaultLimits holds the default limits: the ones DecodeFrame, DecodeDatum,
// DecodeEnvelope and ParseProjection apply, and the depth limit of every
// encoder. It is informational; assigning to it changes no default.
var DefaultLimits = Limits{MaxDepth: defaultMaxDepth, MaxSize: defaultMaxSize}

const (
	defaultMaxDepth = 64
	defaultMaxSize  = 16 << 20
)

// withDefaults returns l with every zero or negative field set to its
// default.
func (l Limits) withDefaults() Limits {
	if l.MaxDepth <= 0 {
		l.MaxDepth = defaultMaxDepth
	}
	if l.MaxSize <= 0 {
		l.MaxSize = defaultMaxSize
	}
	return l
}
