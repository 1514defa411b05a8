//go:build wasip1

package hostcall

// The raw imports of weft ABI v1; docs/abi.md documents each one.

//go:wasmimport weft:env/v1 log
func rawLog(level int32, msg uint64)

//go:wasmimport weft:env/v1 set_output
func rawSetOutput(frame uint64)

//go:wasmimport weft:env/v1 set_error
func rawSetError(frame uint64)

//go:wasmimport weft:env/v1 blob_read
func rawBlobRead(dst uint64)

//go:wasmimport weft:activity/v1 checkpoint
func rawCheckpoint(frame uint64)

//go:wasmimport weft:activity/v1 last_checkpoint
func rawLastCheckpoint() int64

//go:wasmimport weft:activity/v1 cancelled
func rawCancelled() int32

//go:wasmimport weft:activity/v1 heartbeat
func rawHeartbeat() int32

//go:wasmimport weft:activity/v1 progress
func rawProgress(done, total int64, msg uint64) int32

//go:wasmimport weft:workflow/v1 schedule_activity
func rawScheduleActivity(module, function, input, options uint64) int64

//go:wasmimport weft:workflow/v1 start_timer
func rawStartTimer(durationMS int64) int64

//go:wasmimport weft:workflow/v1 wait_signal
func rawWaitSignal(name uint64, timeoutMS int64) int64

//go:wasmimport weft:workflow/v1 await
func rawAwait(ids uint64, mode int32) int32

//go:wasmimport weft:workflow/v1 future_read
func rawFutureRead(id int64, dst uint64) int64

//go:wasmimport weft:workflow/v1 now
func rawNow() int64

//go:wasmimport weft:workflow/v1 random
func rawRandom(dst uint64)

//go:wasmimport weft:workflow/v1 query_request
func rawQueryRequest() int64

//go:wasmimport weft:workflow/v1 continue_as_new
func rawContinueAsNew(input uint64)

//go:wasmimport weft:workflow/v1 history_length
func rawHistoryLength() int64

//go:wasmimport weft:workflow/v1 history_size
func rawHistorySize() int64

//go:wasmimport weft:workflow/v1 watch_cancel
func rawWatchCancel() int64
