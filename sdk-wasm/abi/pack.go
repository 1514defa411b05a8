package abi

// Pack packs a guest pointer and a length into one u64: ptr<<32 | n
// (docs/abi.md, "Pointers and lengths").
func Pack(ptr, n uint32) uint64 { return uint64(ptr)<<32 | uint64(n) }

// Unpack splits a packed u64 into its pointer (high 32 bits) and length
// (low 32 bits).
func Unpack(v uint64) (ptr, n uint32) { return uint32(v >> 32), uint32(v) }

// PackOutcome packs the result of future_result: outcome<<32 | n, where n is
// the length of the pending blob (0 for OutcomeTimeout).
func PackOutcome(o Outcome, n uint32) int64 { return int64(uint64(uint32(o))<<32 | uint64(n)) }

// UnpackOutcome splits the result of future_result.
func UnpackOutcome(v int64) (Outcome, uint32) {
	return Outcome(int32(uint64(v) >> 32)), uint32(uint64(v))
}
