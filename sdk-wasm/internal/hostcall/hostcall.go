// Package hostcall wraps the raw host imports of weft ABI v1 (docs/abi.md,
// "Host imports") in typed Go functions. The raw //go:wasmimport
// declarations live in raw_wasip1.go; on any other platform every function
// panics, because there is no host to call.
package hostcall

import (
	"encoding/binary"
	"runtime"
	"slices"
	"unsafe"

	"github.com/weft-run/weft/sdk-wasm/abi"
)

// addr returns the guest address of the first byte of b, 0 for an empty b.
func addr(b []byte) uint32 {
	if len(b) == 0 {
		return 0
	}
	return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
}

// packBytes packs the address and length of b.
func packBytes(b []byte) uint64 { return abi.Pack(addr(b), uint32(len(b))) }

// packString packs the address and length of s.
func packString(s string) uint64 {
	if len(s) == 0 {
		return 0
	}
	return abi.Pack(uint32(uintptr(unsafe.Pointer(unsafe.StringData(s)))), uint32(len(s)))
}

// Log sends one log line at level.
func Log(level abi.LogLevel, msg string) {
	rawLog(int32(level), packString(msg))
	runtime.KeepAlive(msg)
}

// SetOutput hands the call's result frame to the host, which copies it.
func SetOutput(frame []byte) {
	rawSetOutput(packBytes(frame))
	runtime.KeepAlive(frame)
}

// SetError hands the call's error frame to the host, which copies it.
func SetError(frame []byte) {
	rawSetError(packBytes(frame))
	runtime.KeepAlive(frame)
}

// readBlob copies the pending host blob of n bytes into a slice of its own.
func readBlob(n uint32) []byte {
	b := blobs.take(n)
	rawBlobRead(packBytes(b))
	return b
}

// arenaChunk is the size of the chunks blobs hands out buffers from.
const arenaChunk = 64 << 10

// blobs hands out the buffers of the blobs the host returns. A workflow run
// reads one blob per future it awaits, and in a Go guest one allocation per
// chunk costs far less than one per blob. The module runs one call at a
// time on one goroutine, so it needs no lock.
var blobs arena

// arena is a bump allocator over chunks: a buffer it handed out is never
// handed out again, and a chunk is freed once no buffer in it is referenced.
type arena struct{ chunk []byte }

// take returns a buffer of n bytes whose capacity ends at its length.
func (a *arena) take(n uint32) []byte {
	size := int(n)
	if size > arenaChunk/4 {
		return make([]byte, size)
	}
	if size > cap(a.chunk)-len(a.chunk) {
		a.chunk = make([]byte, 0, arenaChunk)
	}
	at := len(a.chunk)
	a.chunk = a.chunk[:at+size]
	return a.chunk[at : at+size : at+size]
}

// spare returns the free end of the current chunk, at least arenaSpare
// bytes, for the host to write into; claim then hands out what it wrote.
func (a *arena) spare() []byte {
	if cap(a.chunk)-len(a.chunk) < arenaSpare {
		a.chunk = make([]byte, 0, arenaChunk)
	}
	return a.chunk[len(a.chunk):cap(a.chunk)]
}

// claim hands out the first n bytes of what spare returned (n at most its
// length), as take would.
func (a *arena) claim(n uint32) []byte {
	at := len(a.chunk)
	a.chunk = a.chunk[:at+int(n)]
	return a.chunk[at : at+int(n) : at+int(n)]
}

// arenaSpare is the least free space spare offers: results up to this size
// need no second import.
const arenaSpare = 1 << 10

// Checkpoint records frame as the activity's latest snapshot.
func Checkpoint(frame []byte) {
	rawCheckpoint(packBytes(frame))
	runtime.KeepAlive(frame)
}

// LastCheckpoint returns the activity's latest snapshot, if there is one.
func LastCheckpoint() ([]byte, bool) {
	n := rawLastCheckpoint()
	if n < 0 {
		return nil, false
	}
	return readBlob(uint32(n)), true
}

// Cancelled reports whether the activity was asked to stop.
func Cancelled() bool { return rawCancelled() != 0 }

// Heartbeat tells the host the activity is alive and reports whether it
// was asked to stop.
func Heartbeat() bool { return rawHeartbeat() != 0 }

// Progress reports how far the activity got; it returns false when the
// host refused the report.
func Progress(done, total int64, msg string) bool {
	ok := rawProgress(done, total, packString(msg)) == abi.ProgressOK
	runtime.KeepAlive(msg)
	return ok
}

// ScheduleActivity schedules an activity and returns its future id.
func ScheduleActivity(module, function string, input, options []byte) int64 {
	id := rawScheduleActivity(packString(module), packString(function), packBytes(input), packBytes(options))
	runtime.KeepAlive(module)
	runtime.KeepAlive(function)
	runtime.KeepAlive(input)
	runtime.KeepAlive(options)
	return id
}

// StartTimer starts a durable timer and returns its future id.
func StartTimer(durationMS int64) int64 { return rawStartTimer(durationMS) }

// WaitSignal waits for the named signal and returns its future id; a
// negative timeoutMS waits without a deadline.
func WaitSignal(name string, timeoutMS int64) int64 {
	id := rawWaitSignal(packString(name), timeoutMS)
	runtime.KeepAlive(name)
	return id
}

// awaitBuf holds the ids of an await call; it is reused from call to call
// (one call at a time, on one goroutine).
var awaitBuf []byte

// Await waits for the futures ids in mode (abi.AwaitAny or abi.AwaitAll)
// and returns what the host answered: an index, 0, or abi.AwaitSuspended.
func Await(ids []int64, mode int32) int32 {
	buf := slices.Grow(awaitBuf[:0], 8*len(ids))[:8*len(ids)]
	for i, id := range ids {
		binary.LittleEndian.PutUint64(buf[8*i:], uint64(id))
	}
	awaitBuf = buf
	r := rawAwait(packBytes(buf), mode)
	runtime.KeepAlive(buf)
	return r
}

// FutureResult returns the outcome of a resolved future and its blob (nil
// for abi.OutcomeTimeout).
//
// The host writes the blob straight into the free end of the arena when it
// fits (future_read), so a small result costs one import, not two.
func FutureResult(id int64) (abi.Outcome, []byte) {
	dst := blobs.spare()
	o, n := abi.UnpackOutcome(rawFutureRead(id, packBytes(dst)))
	runtime.KeepAlive(dst)
	switch {
	case o == abi.OutcomeTimeout:
		return o, nil
	case int(n) <= len(dst):
		return o, blobs.claim(n) // the bytes the host just wrote
	}
	return o, readBlob(n)
}

// Now returns the workflow's deterministic time in Unix nanoseconds.
func Now() int64 { return rawNow() }

// Random fills p with the workflow's deterministic random bytes.
func Random(p []byte) {
	for len(p) > 0 {
		n := min(len(p), abi.MaxRandomLen)
		rawRandom(packBytes(p[:n]))
		p = p[n:]
	}
}

// QueryRequest returns the query frame {name, input} the call answers,
// and false when the call answers no query.
func QueryRequest() ([]byte, bool) {
	n := rawQueryRequest()
	if n == abi.NoQuery {
		return nil, false
	}
	return readBlob(uint32(n)), true
}

// ContinueAsNew ends the workflow run with frame as the input of the next
// run; the guest then returns StatusOK.
func ContinueAsNew(frame []byte) {
	rawContinueAsNew(packBytes(frame))
	runtime.KeepAlive(frame)
}

// HistoryLength returns the journal events the run replayed or recorded so
// far.
func HistoryLength() int64 { return rawHistoryLength() }

// HistorySize returns the bytes of those events' values.
func HistorySize() int64 { return rawHistorySize() }

// WatchCancel returns the id of the workflow's cancel future
// (abi.CancelFuture); importing it tells the host the module handles its
// cancel requests.
func WatchCancel() int64 { return rawWatchCancel() }
