/*
 * weft.h - the C guest SDK of weft ABI v1 (docs/abi.md).
 *
 * A plugin is a WASI reactor built from its own sources plus weft.c:
 *
 *   clang --target=wasm32-wasi -O2 -mexec-model=reactor -std=c11 \
 *         -I sdk-wasm/c -Wl,--strip-all -o plugin.wasm plugin.c sdk-wasm/c/weft.c
 *
 * weft.c defines every guest export of the ABI (weft_abi_version,
 * weft_alloc, weft_free, weft_manifest, weft_call); the plugin registers its
 * functions by name from a constructor (WEFT_INIT), which _initialize runs
 * before the host reads the manifest.
 *
 * Every value that crosses the ABI is a single-object Avro frame of the
 * schema durable_workflow.protocol.Value v1 (Avro Value protocol: wire
 * format): C3 01 | fingerprint e2 a3 3d ff 55 80 22 37 | datum. This header
 * gives that Value a C type (weft_value), its encoder and decoder, typed
 * wrappers over every host import, and the registration and error API.
 *
 * Memory: every weft_value is heap-allocated and owned by exactly one
 * place. Functions that take a weft_value * parameter named "item", "value"
 * or "details" take ownership of it; const pointers are borrowed. When
 * memory runs out, the SDK traps (the wasm instruction unreachable), which
 * the host reports as memory_limit: no SDK function returns NULL for lack of
 * memory.
 *
 * The SDK is single-threaded, like a wasm instance: the host runs one call
 * at a time in an instance.
 */
#ifndef WEFT_H
#define WEFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ----------------------------------------------------------------------
 * Constants of the wire contract (sdk-wasm/abi, docs/abi.md)
 * -------------------------------------------------------------------- */

/* WEFT_ABI_VERSION is the ABI version this SDK speaks. */
#define WEFT_ABI_VERSION 1

/* Statuses weft_call returns (docs/abi.md, "weft_call"). */
#define WEFT_STATUS_OK 0        /* set_output was called */
#define WEFT_STATUS_ERROR 1     /* set_error was called */
#define WEFT_STATUS_SUSPENDED 2 /* a workflow awaited an unresolved future */

/* WEFT_NO_BLOB is what weft_host_last_checkpoint returns without a snapshot. */
#define WEFT_NO_BLOB (-1)
/* WEFT_AWAIT_SUSPENDED is what weft_host_await returns when the futures are
 * not resolved yet. */
#define WEFT_AWAIT_SUSPENDED (-1)
/* Await modes. */
#define WEFT_AWAIT_ANY 0
#define WEFT_AWAIT_ALL 1
/* WEFT_NO_TIMEOUT as a signal timeout waits without a deadline. */
#define WEFT_NO_TIMEOUT (-1)
/* What weft_host_progress returns: the host took the report, or refused it
 * (a negative count, done above a known total, a message that is not valid
 * UTF-8); the call goes on either way. */
#define WEFT_PROGRESS_OK 0
#define WEFT_PROGRESS_REFUSED 1
/* WEFT_NO_QUERY is what weft_host_query_request returns in a call that
 * answers no query. */
#define WEFT_NO_QUERY (-1)

/* Limits the host enforces. */
#define WEFT_MAX_NAME_LEN 256           /* function, module, signal names */
#define WEFT_MAX_LOG_LEN (16 << 10)     /* longer log lines are cut */
#define WEFT_MAX_PROGRESS_MESSAGE_LEN 256 /* longer progress messages are cut */
#define WEFT_MAX_RANDOM_LEN (64 << 10)  /* one random import call */
#define WEFT_MAX_AWAIT 1024             /* futures in one await */
#define WEFT_MAX_FUNCTIONS 1024         /* functions in a manifest */
#define WEFT_MAX_QUERY_HANDLERS 64      /* query handlers of one workflow call */

/* Codec limits, the same as the Go codec's DefaultLimits. */
#define WEFT_MAX_DEPTH 64               /* nested lists and maps */
#define WEFT_MAX_FRAME_SIZE (16 << 20)  /* bytes of a decoded frame */
#define WEFT_HEADER_SIZE 10             /* magic and fingerprint */

/* weft_level is the level of a log line. */
typedef enum weft_level {
    WEFT_TRACE = 0,
    WEFT_DEBUG = 1,
    WEFT_INFO = 2,
    WEFT_WARN = 3,
    WEFT_ERROR = 4
} weft_level;

/* ----------------------------------------------------------------------
 * Values (Avro Value protocol: value rules)
 * -------------------------------------------------------------------- */

/* weft_kind is one branch of the Value union, in wire order. */
typedef enum weft_kind {
    WEFT_KIND_NULL = 0,
    WEFT_KIND_BOOL = 1,
    WEFT_KIND_LONG = 2,
    WEFT_KIND_DOUBLE = 3,
    WEFT_KIND_BYTES = 4,
    WEFT_KIND_STRING = 5,
    WEFT_KIND_LIST = 6,
    WEFT_KIND_MAP = 7
} weft_kind;

/* weft_value is one Value: a tree of heap nodes. Maps keep their entries
 * in insertion (wire) order, so a decoded value re-encodes to the same
 * bytes. A NULL const weft_value * reads as null everywhere. */
typedef struct weft_value weft_value;

/* Constructors. Strings and bytes are copied. A double is stored as given;
 * NaN and infinities fail when encoded (non_finite_float), and a string or
 * key that is not UTF-8 fails when encoded too. */
weft_value *weft_null(void);
weft_value *weft_bool(bool b);
weft_value *weft_long(int64_t i);
weft_value *weft_double(double d);
weft_value *weft_bytes(const void *p, size_t n);
weft_value *weft_string(const char *s); /* NUL-terminated */
weft_value *weft_string_n(const char *s, size_t n);
weft_value *weft_list(void); /* empty */
weft_value *weft_map(void);  /* empty */

/* weft_list_push appends item (owned) to list and returns list. */
weft_value *weft_list_push(weft_value *list, weft_value *item);
/* weft_map_put sets key to value (owned): it replaces the value of an
 * existing key in place, or appends a new entry. It returns map. */
weft_value *weft_map_put(weft_value *map, const char *key, weft_value *value);
weft_value *weft_map_put_n(weft_value *map, const char *key, size_t key_len, weft_value *value);

/* weft_value_free frees v and everything in it; NULL is ignored. */
void weft_value_free(weft_value *v);
/* weft_value_clone returns a deep copy of v (NULL copies as null). */
weft_value *weft_value_clone(const weft_value *v);

/* Accessors. weft_kind_of(NULL) is WEFT_KIND_NULL. Each weft_as_* returns
 * false, leaving *out alone, when v is of another kind. Strings and keys
 * are NUL-terminated for convenience but may hold NUL bytes: use the
 * length. Pointers stay valid while v lives and is not modified. */
weft_kind weft_kind_of(const weft_value *v);
const char *weft_kind_name(weft_kind k); /* "null", "boolean", "long", ... */
bool weft_is_null(const weft_value *v);
bool weft_as_bool(const weft_value *v, bool *out);
bool weft_as_long(const weft_value *v, int64_t *out);
bool weft_as_double(const weft_value *v, double *out);
bool weft_as_bytes(const weft_value *v, const uint8_t **p, size_t *n);
bool weft_as_string(const weft_value *v, const char **s, size_t *n); /* n may be NULL */
/* weft_len is the number of items of a list or entries of a map, else 0. */
size_t weft_len(const weft_value *v);
/* weft_list_at is item i of a list, NULL when out of range. */
const weft_value *weft_list_at(const weft_value *v, size_t i);
/* weft_map_key_at and weft_map_value_at are entry i of a map, NULL when
 * out of range; key_len may be NULL. */
const char *weft_map_key_at(const weft_value *v, size_t i, size_t *key_len);
const weft_value *weft_map_value_at(const weft_value *v, size_t i);
/* weft_map_get is the value of the first entry called key, NULL when v is
 * not a map or has no such key. */
const weft_value *weft_map_get(const weft_value *v, const char *key);
const weft_value *weft_map_get_n(const weft_value *v, const char *key, size_t key_len);

/* ----------------------------------------------------------------------
 * Codec (Avro Value protocol: wire format)
 * -------------------------------------------------------------------- */

/* weft_code is the result of a codec operation; its names are the error
 * codes of the protocol. */
typedef enum weft_code {
    WEFT_OK = 0,
    WEFT_INVALID_PAYLOAD_FRAMING,    /* "invalid_payload_framing" */
    WEFT_UNSUPPORTED_PAYLOAD_SCHEMA, /* "unsupported_payload_schema" */
    WEFT_INVALID_MAP_KEY,            /* "invalid_map_key" */
    WEFT_NON_FINITE_FLOAT,           /* "non_finite_float" */
    WEFT_PAYLOAD_LIMIT               /* "payload_limit_exceeded" */
} weft_code;

/* weft_code_name returns the snake_case name of c ("ok" for WEFT_OK). */
const char *weft_code_name(weft_code c);
/* weft_codec_message describes the last codec failure as
 * "<code>: <explanation>". It stays valid until the next codec call. */
const char *weft_codec_message(void);

/* weft_buf is a growable byte buffer. WEFT_BUF_INIT is an empty one. */
typedef struct weft_buf {
    uint8_t *data;
    size_t len;
    size_t cap;
} weft_buf;
#define WEFT_BUF_INIT {0, 0, 0}
/* weft_buf_free releases b's memory and empties it. */
void weft_buf_free(weft_buf *b);

/* weft_append_frame appends the single-object frame of v to dst; the
 * datum writes each non-empty list or map as one block and a 00
 * terminator, as every SDK does. It fails with non_finite_float,
 * invalid_payload_framing (a string that is not UTF-8), invalid_map_key (a
 * key that is not UTF-8) or payload_limit_exceeded (deeper than
 * WEFT_MAX_DEPTH), leaving dst->len unchanged. */
weft_code weft_append_frame(weft_buf *dst, const weft_value *v);
/* weft_append_datum is weft_append_frame without the header. */
weft_code weft_append_datum(weft_buf *dst, const weft_value *v);

/* weft_decode_frame decodes a frame into *out (NULL on failure). It checks
 * the magic and the fingerprint, the size limit, then the whole datum
 * before it allocates anything: union indexes, booleans, varints of at most
 * 10 bytes, finite doubles, UTF-8 strings and keys, block counts against
 * the bytes that remain, nesting depth, and trailing bytes. Every valid
 * Avro encoding is accepted (several blocks, negative counts with sizes). */
weft_code weft_decode_frame(const void *frame, size_t n, weft_value **out);
/* weft_decode_datum is weft_decode_frame for a datum without header. */
weft_code weft_decode_datum(const void *datum, size_t n, weft_value **out);

/* ----------------------------------------------------------------------
 * Functions, registration and errors
 * -------------------------------------------------------------------- */

/* A registered function. input is the decoded input, owned by the SDK:
 * the function may read or modify it, and may return it. It returns its
 * output (owned by the SDK from then on; NULL means null), or the result
 * of weft_error to fail. */
typedef weft_value *(*weft_activity_fn)(weft_value *input);
/* A workflow has the same shape; see "Workflows" below for suspension. */
typedef weft_value *(*weft_workflow_fn)(weft_value *input);

/* weft_register_activity and weft_register_workflow add a function to the
 * manifest, in registration order. Call them from a constructor
 * (WEFT_INIT). An empty, over-long or non-UTF-8 name, a duplicate name, a
 * NULL function, more than WEFT_MAX_FUNCTIONS functions, or registering
 * after the host read the manifest writes the reason to stderr and exits,
 * so the deploy fails with that line. name is copied. */
void weft_register_activity(const char *name, weft_activity_fn fn);
void weft_register_workflow(const char *name, weft_workflow_fn fn);

/* WEFT_INIT(fn) { ... } defines a constructor, which the reactor's
 * _initialize runs before the host reads the manifest. */
#define WEFT_INIT(fn) \
    static void fn(void) __attribute__((constructor)); \
    static void fn(void)

/* weft_function_name is the name of the running function ("" outside a
 * call). */
const char *weft_function_name(void);

/* weft_error fails the running call with the application error
 * {type, message, non_retryable, details} (docs/abi.md, "Error value") and
 * returns NULL, so a function writes `return weft_error(...)`. type NULL or
 * "" becomes "error", message NULL becomes "", details (owned) may be NULL.
 * Retry policies match type; non_retryable ends retries at once. Details
 * that cannot be encoded are dropped and the message says why. */
weft_value *weft_error(const char *type, const char *message, bool non_retryable, weft_value *details);

/* weft_error_value builds the error Value map itself (for example to
 * inspect or forward one); type and message as for weft_error. */
weft_value *weft_error_value(const char *type, const char *message, bool non_retryable, weft_value *details);

/* ----------------------------------------------------------------------
 * Host services
 * -------------------------------------------------------------------- */

/* weft_log sends one log line (UTF-8; invalid bytes are replaced by the
 * host, lines cut at WEFT_MAX_LOG_LEN). It may be called at any time. */
void weft_log(weft_level level, const char *msg);
void weft_log_n(weft_level level, const char *msg, size_t n);

/* Activities only (an activity import called by a workflow fails the call
 * with import_not_allowed). */

/* weft_checkpoint records v as the activity's latest snapshot; the host
 * stores it durably before returning, and with on_restart=resume the next
 * attempt reads it with weft_last_checkpoint. It fails only when v cannot
 * be encoded. */
weft_code weft_checkpoint(const weft_value *v);
/* weft_last_checkpoint sets *out to the latest snapshot of the task (from
 * this attempt or an earlier one), or to NULL when there is none. It fails
 * when the snapshot does not decode. */
weft_code weft_last_checkpoint(weft_value **out);
/* weft_cancelled reports whether the task was asked to stop; a long
 * activity polls it and returns early. */
bool weft_cancelled(void);
/* weft_heartbeat tells the host the activity is alive and, like
 * weft_cancelled, reports whether the task was asked to stop. An activity
 * started with a heartbeat timeout calls it (or weft_progress, or
 * weft_checkpoint, which count as heartbeats too) within that interval, or
 * the host stops the attempt with heartbeat_timeout and retries it as its
 * policy allows. */
bool weft_heartbeat(void);
/* weft_progress reports how far the activity got: done units of work out of
 * total (0 when unknown), with a short UTF-8 message (NULL or "" for none;
 * the host keeps its first WEFT_MAX_PROGRESS_MESSAGE_LEN bytes, cut at a
 * character boundary). The user sees it live; the daemon records a few
 * reports a second and always the last one, so report as often as you like.
 * It never waits for the store. It returns false when the host refused the
 * report (a negative count, done above a known total, invalid UTF-8). */
bool weft_progress(int64_t done, int64_t total, const char *msg);

/* ----------------------------------------------------------------------
 * Workflows (weft:workflow/v1)
 *
 * A workflow runs from the start each time it is woken; the host answers
 * each call below from the task's journal when it was made before. Workflow
 * code must be deterministic: use weft_now and weft_random, never the WASI
 * clock or random sources, to make decisions.
 *
 * When a future is not resolved yet, waiting on it returns
 * WEFT_OUTCOME_SUSPENDED (or -1 / false for the await functions): the
 * workflow must then return at once (any return value is ignored), and the
 * host wakes and replays it later. After that, every workflow call of this
 * SDK returns at once without reaching the host.
 * -------------------------------------------------------------------- */

/* weft_future is an activity, a timer or a signal wait. Futures belong to
 * the running call and are freed when it returns. */
typedef struct weft_future weft_future;

/* weft_outcome says how a future resolved. */
typedef enum weft_outcome {
    WEFT_OUTCOME_VALUE = 0,     /* *out is the result Value */
    WEFT_OUTCOME_ERROR = 1,     /* *out is the error Value (a map) */
    WEFT_OUTCOME_TIMEOUT = 2,   /* a signal wait timed out; *out is NULL */
    WEFT_OUTCOME_SUSPENDED = 3  /* not resolved yet: return at once */
} weft_outcome;

/* weft_retry_policy: zero fields mean the runtime's defaults. */
typedef struct weft_retry_policy {
    int32_t max_attempts;        /* the first included; 1 means no retry */
    int64_t initial_interval_ms; /* delay before the first retry */
    double backoff_coefficient;  /* multiplies the delay after each retry */
    int64_t max_interval_ms;     /* caps the delay */
    const char *const *non_retryable_error_types; /* never retried */
    size_t non_retryable_error_types_len;
} weft_retry_policy;

/* weft_activity_options: zero fields mean the defaults. */
typedef struct weft_activity_options {
    const char *module;        /* deployed module; NULL: the workflow's own */
    int64_t timeout_ms;        /* start-to-close timeout of one attempt */
    const weft_retry_policy *retry; /* NULL: the runtime's policy */
    int64_t schedule_to_start_timeout_ms; /* longest time queued; never retried */
    int64_t heartbeat_timeout_ms;         /* longest time between heartbeats */
} weft_activity_options;

/* weft_execute_activity schedules the activity called name with input
 * (borrowed) and options (NULL for the defaults). An input that cannot be
 * encoded makes a future that resolves to an error of type
 * "weft.invalid_input" without scheduling anything. */
weft_future *weft_execute_activity(const char *name, const weft_value *input, const weft_activity_options *opts);
/* weft_child_workflow_options: zero fields mean the defaults. */
typedef struct weft_child_workflow_options {
    const char *module;              /* deployed module; NULL: the workflow's own */
    const char *workflow_id;         /* NULL: the child's task id */
    const char *parent_close_policy; /* "terminate" (NULL), "request_cancel" or "abandon" */
    int64_t timeout_ms;              /* bounds each run of the child */
    const weft_retry_policy *retry;  /* NULL: one attempt */
} weft_child_workflow_options;

/* weft_execute_child_workflow starts the workflow called name as a child
 * of this one, with input (borrowed), and returns its future, which
 * resolves to the child's result or its error (docs/workflows.md, "Child
 * workflows"). */
weft_future *weft_execute_child_workflow(const char *name, const weft_value *input, const weft_child_workflow_options *opts);
/* weft_start_timer starts a durable timer of ms milliseconds (negative
 * counts as 0); the future resolves to null. */
weft_future *weft_start_timer(int64_t ms);
/* weft_wait_signal waits for the next signal called name; the future
 * resolves to its payload, or to WEFT_OUTCOME_TIMEOUT after timeout_ms
 * (WEFT_NO_TIMEOUT, or any negative value, waits forever). */
weft_future *weft_wait_signal(const char *name, int64_t timeout_ms);

/* weft_cancel_future returns the workflow's cancel future, which resolves
 * to null when the workflow is asked to cancel (docs/workflows.md,
 * "Cancellation"): pass it to weft_await_any with the futures a step waits
 * for to learn of the request at that point, the same on every replay,
 * then compensate (further activities run as usual) and end with
 * weft_error("cancelled", ...), which ends the task cancelled. A workflow
 * call that never asks for it is ended by the request instead. */
weft_future *weft_cancel_future(void);

/* weft_future_get waits for f and sets *out (owned by the caller; out may
 * be NULL to discard it). */
weft_outcome weft_future_get(weft_future *f, weft_value **out);
/* weft_await_any waits until one of fs is resolved and returns its index
 * (the one resolved first in the journal), or -1 when suspended. */
int weft_await_any(weft_future *const *fs, size_t n);
/* weft_await_all waits until every one of fs is resolved; false when
 * suspended. Their results are then read with weft_future_get. */
bool weft_await_all(weft_future *const *fs, size_t n);
/* weft_suspended reports whether the running workflow was suspended. */
bool weft_suspended(void);

/* weft_now is the workflow's deterministic time in Unix nanoseconds. */
int64_t weft_now(void);
/* weft_random fills dst with the workflow's deterministic random bytes. */
void weft_random(void *dst, size_t n);

/* weft_continue_as_new ends the workflow's run and starts it again, as a
 * new run of the same workflow id, with input (owned by the SDK) and a
 * journal that starts over; it returns NULL, so a workflow writes
 * `return weft_continue_as_new(next)`. What the function returns is then
 * ignored. A suspended workflow does not continue. An input that cannot be
 * encoded fails the call with "weft.invalid_input". */
weft_value *weft_continue_as_new(weft_value *input);
/* weft_history_length is how many journal events the run replayed or
 * recorded so far (its activities, timers and signal waits, and the
 * results it read); weft_history_size the bytes of their values with the
 * workflow's input. Both are the same at the same point of every replay,
 * so a workflow may decide on them to continue as new. */
int64_t weft_history_length(void);
int64_t weft_history_size(void);

/* weft_query_fn answers a query (docs/workflows.md, "Queries"): input is
 * the query's argument (borrowed), data what weft_set_query_handler was
 * given. It returns the answer (owned by the SDK), or fails the query with
 * `return weft_error(...)`. It must only read the workflow's state:
 * weft_now, weft_random and weft_log work, while an activity, a timer, a
 * signal wait or an await fails the query with query_command. */
typedef weft_value *(*weft_query_fn)(const weft_value *input, void *data);

/* weft_set_query_handler registers fn as the query handler called name for
 * the rest of the running workflow call, replacing one of the same name. A
 * query replays the workflow in a call of its own up to where it waits or
 * returns, then calls the handler; it is never journaled. It returns false
 * outside a workflow call, for a name that is empty, longer than 256 bytes
 * or not UTF-8, for a NULL fn, and past WEFT_MAX_QUERY_HANDLERS handlers.
 * A module that never calls it never imports query_request. */
bool weft_set_query_handler(const char *name, weft_query_fn fn, void *data);

/* ----------------------------------------------------------------------
 * Raw host imports (docs/abi.md, "Host imports")
 *
 * Typed wrappers that pack each pointer and length into the ABI's u64
 * (ptr << 32 | len). Plugins rarely need them: weft_call already hands the
 * output or the error to the host, and the functions above wrap the rest.
 * -------------------------------------------------------------------- */

/* weft:env/v1 */
void weft_host_log(int32_t level, const void *msg, size_t n);
void weft_host_set_output(const void *frame, size_t n);
void weft_host_set_error(const void *frame, size_t n);
void weft_host_blob_read(void *dst, size_t n);
/* weft:activity/v1 */
void weft_host_checkpoint(const void *frame, size_t n);
int64_t weft_host_last_checkpoint(void); /* blob length, or WEFT_NO_BLOB */
int32_t weft_host_cancelled(void);
int32_t weft_host_heartbeat(void); /* 1 once cancellation was asked */
int32_t weft_host_progress(int64_t done, int64_t total, const void *msg, size_t n); /* WEFT_PROGRESS_OK or _REFUSED */
/* weft:workflow/v1 */
int64_t weft_host_schedule_activity(const void *module, size_t module_len, const void *function, size_t function_len,
                                    const void *input, size_t input_len, const void *options, size_t options_len);
int64_t weft_host_start_timer(int64_t duration_ms);
int64_t weft_host_wait_signal(const void *name, size_t name_len, int64_t timeout_ms);
int32_t weft_host_await(const int64_t *ids, size_t n, int32_t mode); /* index, 0, or WEFT_AWAIT_SUSPENDED */
int64_t weft_host_future_result(int64_t id); /* outcome << 32 | blob length */
int64_t weft_host_now(void);
void weft_host_random(void *dst, size_t n);
int64_t weft_host_query_request(void); /* query frame length, or WEFT_NO_QUERY */
void weft_host_continue_as_new(const void *frame, size_t n);
int64_t weft_host_history_length(void);
int64_t weft_host_history_size(void);
int64_t weft_host_watch_cancel(void); /* the cancel future's id */

#ifdef __cplusplus
}
#endif

#endif /* WEFT_H */
