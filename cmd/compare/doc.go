// Package compare holds weft's comparison benchmarks, each run side by side
// with weft's own figure in one run, so that a ratio means the same load
// on the same machine:
//
//   - BenchmarkLoadVersusRiver: `weft bench load`'s work (10,000 background
//     echo tasks from 32 HTTP clients, durable commits) against River
//     (riverqueue/river with its SQLite driver) inserting and working as
//     many no-op jobs, with River's defaults and tuned for throughput.
//   - BenchmarkEcho: the per-call cost of an echo of a 100-byte Value through
//     weft's host and through Extism's Go SDK (extism/go-sdk) on the same
//     wazero, with close-on-context-done on as in the host, and with
//     Extism's default runtime configuration.
//
// It is a module of its own (cmd/compare/go.mod, with a replace of weft to
// the repository root) so that weft's go.mod requires neither Extism nor
// River: a user who builds or imports weft does not download them. It
// reaches weft's benchmark harness through cmd/internal (cmd/internal/
// loadbench and cmd/internal/daemon), which the internal-path rule lets it
// import. Its tests are quick smoke runs of both sides; the figures come
// from `make bench-compare`:
//
//	cd cmd/compare && go test -run '^$' -bench . -benchtime 1x ./...
package compare
