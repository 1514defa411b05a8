// Package daemon is weft's daemon assembly: the configuration of `weft
// serve` (Config, its flags), and Main, which opens the pieces in order (the
// data directory's lock and file modes, the SQLite store, the preflight
// check, the compile child, the wazero host, the engine with start-up
// recovery, the HTTP API) and closes them in reverse.
//
// It is the one place, with cmd/weft (the cobra CLI that calls it), that
// wires concrete implementations together. Tests and benchmarks run the
// daemon in their own process with it, the way users run `weft serve`:
//
//	cfg, err := daemon.ParseFlags([]string{"--data", dir, "--addr", "127.0.0.1:0"})
//	if err != nil {
//		return err
//	}
//	cfg.CompileBin = weftBinary // the compile child: `weft internal compile`
//	m := daemon.New(cfg, io.Discard, os.Stderr)
//	if err := m.Run(ctx); err != nil {
//		return err
//	}
//	defer m.Close(context.Background())
//
// The package lives under cmd/internal: only weft's commands (cmd/weft and
// the comparison benchmarks in cmd/compare) import it.
package daemon
