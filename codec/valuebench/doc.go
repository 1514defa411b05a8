// Package valuebench is the reproducible Avro Value benchmark of the
// Durable Workflow SDKs (reference §5), for weft: the shared corpus
// avro-value-benchmark-v1.json (embedded, SHA-256 pinned) encoded and
// decoded as compact JSON, as the retired JSON-in-Avro wrapper and as the
// fixed typed Value of package codec, plus the same value through
// hamba/avro's generic API, measured side by side in one run.
//
// Run returns a Report shaped like the Rust SDK's JSON report; the command
// weft bench avro-value prints it. The sizes must equal the published ones
// (193/249, 196/197/290, 154/164/246) and the typed frame's SHA-256 the
// pinned one, or the run fails before it measures anything.
//
// # Native values
//
// Each path starts from, and decodes back to, the same native Go value:
// what a program holds after decoding the corpus JSON with member order and
// the integer/double distinction kept (Object, Float, int64, string, bool,
// nil, []any). The corpus object {"$avro_bytes":"AP8="} stands for Avro
// bytes on the typed paths only; the JSON baselines keep it as an object
// (reference §2.4).
//
// # Adapters
//
// The typed paths adapt native values the way a production adapter would:
// AppendEnvelope streams a native value into a pooled codec.Encoder, which
// writes the datum, frame and envelope JSON with no codec.Value in between,
// and DecodeEnvelope checks envelope JSON with a pooled codec.Decoder and
// pulls its values straight into native ones. ToValue and FromValue go
// through a codec.Value instead; the tests check that both routes give the
// same bytes and values. The hamba paths adapt to and from hamba/avro's
// generic mapping (ToHamba, FromHamba) and frame hamba's datum with the same
// envelope helpers of package codec (codec.AppendFrameEnvelopeJSON,
// codec.ParseEnvelopeFrame), so the two differ only in adapter and datum
// codec.
//
// # Timing
//
// Each path runs Config.Iterations operations per sample; the report gives
// the median of Config.Samples samples in microseconds per operation. The
// paths take turns in chunks of 100 operations within every sample, so
// noise and garbage collection fall on all of them alike. Go benchmarks
// with allocation counts for each path are in this package's tests:
//
//	go test -run='^$' -bench=. -benchmem ./codec/valuebench/
package valuebench
