package abi

// Version is the ABI version this package describes. A guest reports the
// version it was built for through the ExportABIVersion export and the
// manifest's "abi_version" field; the host refuses any other version with
// CodeABIMismatch (docs/abi.md, "Versioning").
const Version = 1

// Host import modules. Each name carries the "weft:" namespace and the ABI
// version, so a guest built for another version fails at deploy with a clear
// message instead of binding to functions whose meaning changed
// (docs/abi.md, "Host imports").
const (
	// ModuleEnv holds the imports every call may use: log, set_output,
	// set_error and blob_read.
	ModuleEnv = "weft:env/v1"
	// ModuleActivity holds the imports only an activity call may use:
	// checkpoint, last_checkpoint, cancelled and progress.
	ModuleActivity = "weft:activity/v1"
	// ModuleWorkflow holds the imports only a workflow call may use:
	// schedule_activity, start_timer, wait_signal, await, future_result,
	// future_read, now
	// and random.
	ModuleWorkflow = "weft:workflow/v1"
	// ModuleWASI is the WASI preview 1 module the host also provides, with no
	// preopened directories, no environment and no arguments.
	ModuleWASI = "wasi_snapshot_preview1"
)

// Guest exports (docs/abi.md, "Guest exports").
const (
	// ExportMemory is the guest's linear memory.
	ExportMemory = "memory"
	// ExportABIVersion is func() -> i32, the ABI version the guest speaks.
	ExportABIVersion = "weft_abi_version"
	// ExportAlloc is func(size i32) -> i32, a guest allocation of size bytes
	// that the host may write into.
	ExportAlloc = "weft_alloc"
	// ExportFree is func(ptr i32, size i32), the release of an allocation
	// made by ExportAlloc, with the size that was asked for.
	ExportFree = "weft_free"
	// ExportManifest is func() -> i64, the packed pointer and length of the
	// manifest frame, owned by the guest.
	ExportManifest = "weft_manifest"
	// ExportCall is func(name i64, input i64) -> i32: run the named function
	// on the input frame and return a Status.
	ExportCall = "weft_call"
	// ExportInitialize is the WASI reactor initializer; the host calls it
	// once per instance, before anything else, when the guest exports it.
	ExportInitialize = "_initialize"
	// ExportStart is the WASI command entry point. A module that exports it
	// without ExportInitialize is a command, not a reactor, and is refused.
	ExportStart = "_start"
)

// Imports of ModuleEnv.
const (
	// ImportLog is log(level i32, msg i64): a UTF-8 log line.
	ImportLog = "log"
	// ImportSetOutput is set_output(frame i64): the call's result.
	ImportSetOutput = "set_output"
	// ImportSetError is set_error(frame i64): the call's application error.
	ImportSetError = "set_error"
	// ImportBlobRead is blob_read(dst i64): copy the pending host blob.
	ImportBlobRead = "blob_read"
)

// Imports of ModuleActivity.
const (
	// ImportCheckpoint is checkpoint(frame i64): record a snapshot.
	ImportCheckpoint = "checkpoint"
	// ImportLastCheckpoint is last_checkpoint() -> i64: the length of the
	// latest snapshot, made the pending blob, or NoBlob.
	ImportLastCheckpoint = "last_checkpoint"
	// ImportCancelled is cancelled() -> i32: 1 once cancellation was asked.
	ImportCancelled = "cancelled"
	// ImportProgress is progress(done i64, total i64, msg i64) -> i32:
	// report how far the activity got; ProgressOK or ProgressRefused.
	ImportProgress = "progress"
	// ImportHeartbeat is heartbeat() -> i32: the activity is alive; returns
	// 1 once cancellation was asked, like cancelled. A progress or
	// checkpoint call counts as a heartbeat too.
	ImportHeartbeat = "heartbeat"
)

// Imports of ModuleWorkflow.
const (
	// ImportScheduleActivity is schedule_activity(module i64, function i64,
	// input i64, options i64) -> i64 future id.
	ImportScheduleActivity = "schedule_activity"
	// ImportStartTimer is start_timer(duration_ms i64) -> i64 future id.
	ImportStartTimer = "start_timer"
	// ImportWaitSignal is wait_signal(name i64, timeout_ms i64) -> i64
	// future id.
	ImportWaitSignal = "wait_signal"
	// ImportAwait is await(ids i64, mode i32) -> i32: an index, 0, or
	// AwaitSuspended.
	ImportAwait = "await"
	// ImportFutureResult is future_result(id i64) -> i64: the packed Outcome
	// and blob length of a resolved future.
	ImportFutureResult = "future_result"
	// ImportFutureRead is future_read(id i64, dst i64) -> i64:
	// future_result that also copies the frame into dst when it fits.
	ImportFutureRead = "future_read"
	// ImportNow is now() -> i64: deterministic Unix time in nanoseconds.
	ImportNow = "now"
	// ImportRandom is random(dst i64): fill dst with deterministic bytes.
	ImportRandom = "random"
	// ImportQueryRequest is query_request() -> i64: NoQuery when the call
	// runs the workflow, else the length of the pending blob, the query
	// frame {name, input}, that the guest answers instead of its own
	// result.
	ImportQueryRequest = "query_request"
	// ImportContinueAsNew is continue_as_new(input i64): end the run and
	// start the workflow again, as a new run of the same workflow id, with
	// input; the guest then returns StatusOK.
	ImportContinueAsNew = "continue_as_new"
	// ImportHistoryLength is history_length() -> i64: the journal events
	// the run replayed or recorded so far (its commands and the results
	// it read), the same at the same point of every replay.
	ImportHistoryLength = "history_length"
	// ImportHistorySize is history_size() -> i64: the bytes of those
	// events' values (the workflow's input, its commands' inputs, the
	// results it read).
	ImportHistorySize = "history_size"
	// ImportWatchCancel is watch_cancel() -> i64: the id of the future
	// that resolves when the workflow is asked to cancel (CancelFuture). A
	// call that calls it handles its own cancel.
	ImportWatchCancel = "watch_cancel"
)

// Special return values of imports (docs/abi.md, "Host imports").
const (
	// NoBlob is what last_checkpoint returns when there is no snapshot.
	NoBlob int64 = -1
	// AwaitSuspended is what await returns when the futures it waits for
	// are not resolved yet: the guest must unwind and return
	// StatusSuspended from weft_call.
	AwaitSuspended int32 = -1
	// CancelFuture is the id of the workflow's cancel future, which
	// watch_cancel returns: it resolves to null (OutcomeValue) when the
	// workflow is asked to cancel, at that point of its journal.
	CancelFuture int64 = 0
	// NoTimeout as the timeout_ms of wait_signal waits without a deadline.
	// Any negative value means the same.
	NoTimeout int64 = -1
	// ProgressOK is what progress returns when the host took the report.
	ProgressOK int32 = 0
	// ProgressRefused is what progress returns for a report the host
	// dropped: a negative done or total, done above a known total, or a
	// message that is not valid UTF-8. The call goes on.
	ProgressRefused int32 = 1
	// NoQuery is what query_request returns in a call that answers no
	// query: the workflow runs as usual.
	NoQuery int64 = -1
)

// Await modes, the mode argument of await.
const (
	// AwaitAny returns as soon as one of the futures is resolved.
	AwaitAny int32 = 0
	// AwaitAll returns once every future is resolved.
	AwaitAll int32 = 1
)

// Limits the host enforces on arguments of imports and exports.
const (
	// MaxNameLen is the longest function, module or signal name in bytes.
	MaxNameLen = 256
	// MaxLogLen is the longest log message in bytes; longer ones are cut.
	MaxLogLen = 16 << 10
	// MaxProgressMessageLen is the longest progress message in bytes;
	// longer ones are cut at a rune boundary.
	MaxProgressMessageLen = 256
	// MaxRandomLen is the most bytes one random call may ask for.
	MaxRandomLen = 64 << 10
	// MaxAwait is the most futures one await call may name.
	MaxAwait = 1024
	// MaxManifestFunctions is the most functions a manifest may list.
	MaxManifestFunctions = 1024
)

// Manifest field names: the manifest is a map Value
// {abi_version: long, functions: [{name: string, kind: string}]}.
const (
	ManifestABIVersion = "abi_version"
	ManifestFunctions  = "functions"
	ManifestName       = "name"
	ManifestKind       = "kind"
)

// Parent close policies, the values of ChildParentClosePolicy.
const (
	ParentCloseTerminate     = "terminate"
	ParentCloseRequestCancel = "request_cancel"
	ParentCloseAbandon       = "abandon"
)

// Query field names: the blob of query_request is a map Value
// {name: string, input: any}.
const (
	QueryName  = "name"
	QueryInput = "input"
)

// ErrorTypeQueryNotFound is the application error type a guest returns
// for a query it has no handler for.
const ErrorTypeQueryNotFound = "weft.query_not_found"

// Error field names: an application error is a map Value
// {type: string, message: string, non_retryable: boolean, details: any}.
// Only "type" is required.
const (
	ErrorType         = "type"
	ErrorMessage      = "message"
	ErrorNonRetryable = "non_retryable"
	ErrorDetails      = "details"
)

// Activity option field names: the options frame of schedule_activity is a
// map Value (or null for the defaults) with these optional fields.
const (
	// OptionTimeoutMS is the start-to-close timeout of one attempt, in
	// milliseconds (long).
	OptionTimeoutMS = "timeout_ms"
	// OptionScheduleToStartTimeoutMS bounds how long the activity stays
	// queued before a worker takes it, in milliseconds (long); it then
	// fails with schedule_to_start_timeout, never retried.
	OptionScheduleToStartTimeoutMS = "schedule_to_start_timeout_ms"
	// OptionHeartbeatTimeoutMS is the longest an attempt may go without a
	// heartbeat, in milliseconds (long); it is then stopped with
	// heartbeat_timeout and retried as its policy allows.
	OptionHeartbeatTimeoutMS = "heartbeat_timeout_ms"
	// MaxTimeoutMS is the largest value of a timeout option: ten years.
	MaxTimeoutMS = 10 * 365 * 24 * 3600 * 1000
	// OptionChildWorkflow makes the call a child workflow: function must be
	// a workflow, and the value is a map with the optional ChildWorkflow*
	// fields (an empty map for the defaults). A child workflow takes
	// timeout_ms (each of its runs) and retry, not the activity timeouts.
	OptionChildWorkflow = "child_workflow"
	// ChildWorkflowID is the child's workflow id (string); defaults to
	// its task id.
	ChildWorkflowID = "workflow_id"
	// ChildParentClosePolicy is what the parent's end does to the child
	// while it runs (string): ParentCloseTerminate (the default),
	// ParentCloseRequestCancel or ParentCloseAbandon.
	ChildParentClosePolicy = "parent_close_policy"
	// OptionRetry is the retry policy, a map with the Retry* fields.
	OptionRetry = "retry"
	// RetryMaxAttempts is the most attempts, including the first (long;
	// 0 means the runtime's default, 1 means no retry).
	RetryMaxAttempts = "max_attempts"
	// RetryInitialIntervalMS is the delay before the first retry (long, ms).
	RetryInitialIntervalMS = "initial_interval_ms"
	// RetryBackoffCoefficient multiplies the delay after each retry (double).
	RetryBackoffCoefficient = "backoff_coefficient"
	// RetryMaxIntervalMS caps the delay between retries (long, ms).
	RetryMaxIntervalMS = "max_interval_ms"
	// RetryNonRetryableErrorTypes lists error types that are never retried
	// (list of strings).
	RetryNonRetryableErrorTypes = "non_retryable_error_types"
)
