//go:build !wasip1

package hostcall

// Outside a wasm guest there is no host: every raw import panics with
// errNoHost. Build plugins with GOOS=wasip1 GOARCH=wasm.

const errNoHost = "weft: host imports exist only in a wasm guest (GOOS=wasip1 GOARCH=wasm)"

func rawLog(int32, uint64)                                     { panic(errNoHost) }
func rawSetOutput(uint64)                                      { panic(errNoHost) }
func rawSetError(uint64)                                       { panic(errNoHost) }
func rawBlobRead(uint64)                                       { panic(errNoHost) }
func rawCheckpoint(uint64)                                     { panic(errNoHost) }
func rawLastCheckpoint() int64                                 { panic(errNoHost) }
func rawCancelled() int32                                      { panic(errNoHost) }
func rawHeartbeat() int32                                      { panic(errNoHost) }
func rawProgress(int64, int64, uint64) int32                   { panic(errNoHost) }
func rawScheduleActivity(uint64, uint64, uint64, uint64) int64 { panic(errNoHost) }
func rawStartTimer(int64) int64                                { panic(errNoHost) }
func rawWaitSignal(uint64, int64) int64                        { panic(errNoHost) }
func rawAwait(uint64, int32) int32                             { panic(errNoHost) }
func rawFutureRead(int64, uint64) int64                        { panic(errNoHost) }
func rawNow() int64                                            { panic(errNoHost) }
func rawRandom(uint64)                                         { panic(errNoHost) }
func rawQueryRequest() int64                                   { panic(errNoHost) }
func rawContinueAsNew(uint64)                                  { panic(errNoHost) }
func rawHistoryLength() int64                                  { panic(errNoHost) }
func rawHistorySize() int64                                    { panic(errNoHost) }
func rawWatchCancel() int64                                    { panic(errNoHost) }
