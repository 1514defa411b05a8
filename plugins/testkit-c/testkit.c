/*
 * testkit-c is weft's stock test plugin written in C: the same functions,
 * inputs, outputs and errors as plugins/testkit (Go), built on the C SDK
 * (sdk-wasm/c). The host's tests run both and compare them.
 *
 *   echo   returns its input unchanged
 *   sleep  {"ms": N}: sleeps N ms, polling for cancellation every 5 ms;
 *          cancelled, it fails with the non-retryable type "cancelled"
 *   spin   loops forever; only the host's timeout or cancellation stops it
 *   fail   {"type", "message", "non_retryable"}: returns that typed error
 *   trap   executes the wasm instruction unreachable
 *   grow   allocates 1 MiB blocks until the memory limit stops it
 *   count  {"to": N, "checkpoint_every": K}: counts from the last
 *          checkpoint (or 0) to N, checkpointing every K steps, and returns
 *          {"count": N, "resumed_from": M}; reports its progress (done =
 *          the count, total = N) at each checkpoint, every 4096 steps
 *          without checkpoints, and at the end
 *   heartbeat_spin  {"beats", "interval_ms", "until_ms"}: heartbeats
 *          beats times, interval_ms apart, then spins without a heartbeat
 *          before the Unix time until_ms, or returns "done" after it
 *   chain  (a workflow) {"runs": N, "done": D}: runs echo(D), then continues
 *          as new with done D+1 until N runs ran, and returns
 *          {"runs": N, "history_length": L} (L of the last run); its query
 *          "done" answers D
 *   parent (a workflow) {"workflow_id", "policy", "module", "signals"}: starts
 *          tally as its child workflow, with those options and
 *          {"signals": signals}, and returns the child's sum
 *   saga   (a workflow) {"steps", "hold_ms", "child"}: runs steps echoes of
 *          {"do": i}, then a sleep of hold_ms (and, with child, a child
 *          tally waiting for one signal); asked to cancel, or when a step
 *          fails, it echoes {"undo": i} for each step done, newest first,
 *          and ends with the error (type "cancelled" for a cancel);
 *          otherwise it returns steps
 *   tally  (a workflow) {"signals": N}: adds up the longs of N "add"
 *          signals and returns the sum; its queries: "state" answers
 *          {"sum", "count"} so far, "echo" its input, "fail" an error of
 *          type "refused"; "schedule" calls an activity and "wait" a timer
 *          (commands a query may not call), "spin" loops forever
 *
 * Build (the committed testkit-c.wasm is this command's output, run from
 * the repository root by scripts/build-wasm-c.sh):
 *
 *   clang --target=wasm32-wasi -O2 -std=c11 -Wall -Wextra -Werror -I sdk-wasm/c \
 *         -mexec-model=reactor -Wl,--strip-all -o plugins/testkit-c/testkit-c.wasm \
 *         plugins/testkit-c/testkit.c sdk-wasm/c/weft.c
 */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "weft.h"

/* ----------------------------------------------------------------------
 * Input fields. Like the Go SDK's conversion of a map into a struct: a
 * null input or a missing or null field leaves the zero value, unknown
 * keys are ignored, a later repeated key wins, and a field of another kind
 * (or an input that is neither a map nor null) fails the call with the
 * non-retryable type "weft.invalid_input".
 * -------------------------------------------------------------------- */

/* invalid fails the call: "<field>: cannot store a <kind> value in a <want>". */
static weft_value *invalid(const char *field, const weft_value *v, const char *want) {
    char text[160] = "";
    if (field) {
        strncat(text, field, 60);
        strcat(text, ": ");
    }
    strcat(text, "cannot store a ");
    strcat(text, weft_kind_name(weft_kind_of(v)));
    strcat(text, " value in a ");
    strcat(text, want);
    return weft_error("weft.invalid_input", text, true, NULL);
}

/* fields checks that input is a map or null; it fails the call otherwise. */
static bool fields(const weft_value *input, const char *want) {
    weft_kind k = weft_kind_of(input);
    if (k == WEFT_KIND_MAP || k == WEFT_KIND_NULL) return true;
    invalid(NULL, input, want);
    return false;
}

/* field returns the value of the last entry called key, or NULL. */
static const weft_value *field(const weft_value *input, const char *key) {
    const weft_value *found = NULL;
    for (size_t i = 0; i < weft_len(input); i++)
        if (strcmp(weft_map_key_at(input, i, NULL), key) == 0) found = weft_map_value_at(input, i);
    return found;
}

static bool long_field(const weft_value *input, const char *key, int64_t *out) {
    const weft_value *v = field(input, key);
    *out = 0;
    if (weft_is_null(v) || weft_as_long(v, out)) return true;
    invalid(key, v, "long");
    return false;
}

static bool string_field(const weft_value *input, const char *key, const char **out) {
    const weft_value *v = field(input, key);
    *out = "";
    if (weft_is_null(v) || weft_as_string(v, out, NULL)) return true;
    invalid(key, v, "string");
    return false;
}

static bool bool_field(const weft_value *input, const char *key, bool *out) {
    const weft_value *v = field(input, key);
    *out = false;
    if (weft_is_null(v) || weft_as_bool(v, out)) return true;
    invalid(key, v, "boolean");
    return false;
}

/* ----------------------------------------------------------------------
 * Activities
 * -------------------------------------------------------------------- */

static weft_value *echo(weft_value *input) { return input; }

/* sleep_slice_ns is how often sleep checks for cancellation. */
#define SLEEP_SLICE_NS 5000000LL

static int64_t monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static weft_value *sleep_ms(weft_value *input) {
    int64_t ms;
    if (!fields(input, "sleep input") || !long_field(input, "ms", &ms)) return NULL;
    if (ms > INT64_MAX / 1000000) ms = INT64_MAX / 1000000;
    int64_t deadline = monotonic_ns() + ms * 1000000;
    for (;;) {
        if (weft_cancelled()) return weft_error("cancelled", "sleep cancelled", true, NULL);
        int64_t left = deadline - monotonic_ns();
        if (left <= 0) return weft_null();
        if (left > SLEEP_SLICE_NS) left = SLEEP_SLICE_NS;
        struct timespec ts = {0, (long)left};
        nanosleep(&ts, NULL);
    }
}

/* spins counts spin's iterations, so the loop has an effect. */
static volatile uint64_t spins;

static weft_value *spin(weft_value *input) {
    (void)input;
    for (;;) spins++;
}

static weft_value *fail(weft_value *input) {
    const char *type, *message;
    bool non_retryable;
    if (!fields(input, "fail input") || !string_field(input, "type", &type) || !string_field(input, "message", &message) ||
        !bool_field(input, "non_retryable", &non_retryable))
        return NULL;
    return weft_error(type, message, non_retryable, NULL);
}

static weft_value *trap(weft_value *input) {
    (void)input;
    __builtin_trap();
}

/* hoard keeps grow's allocations alive. */
static void **hoard;
static size_t hoard_len;

static weft_value *grow(weft_value *input) {
    (void)input;
    for (;;) {
        char *b = malloc(1 << 20);
        void **h = realloc(hoard, (hoard_len + 1) * sizeof *hoard);
        if (!b || !h) __builtin_trap(); /* the memory limit: the host reports memory_limit */
        b[(1 << 20) - 1] = 1;
        hoard = h;
        hoard[hoard_len++] = b;
    }
}

/* COUNT_PROGRESS_EVERY is how many steps apart count reports its progress
 * when it does not checkpoint. */
#define COUNT_PROGRESS_EVERY 4096

static weft_value *count(weft_value *input) {
    int64_t to, every, from = 0;
    if (!fields(input, "count input") || !long_field(input, "to", &to) || !long_field(input, "checkpoint_every", &every))
        return NULL;
    weft_value *last;
    if (weft_last_checkpoint(&last) != WEFT_OK) return weft_error("error", weft_codec_message(), false, NULL);
    if (last && !weft_is_null(last) && !weft_as_long(last, &from)) {
        weft_value *e = weft_error("error", "the checkpoint is not a long", false, NULL);
        weft_value_free(last);
        return e;
    }
    weft_value_free(last);
    /* Progress (done = the count, total = to) at each checkpoint, every
     * COUNT_PROGRESS_EVERY steps without checkpoints, and at the end. */
    int64_t step = every > 0 ? every : COUNT_PROGRESS_EVERY;
    int64_t total = to > 0 ? to : 0;
    int64_t n = from;
    while (n < to) {
        n++;
        if (n % step != 0 && n != to) continue;
        if (every > 0 && n % every == 0) {
            weft_value *v = weft_long(n);
            weft_checkpoint(v); /* a long always encodes */
            weft_value_free(v);
        }
        weft_progress(n, total, "counting");
    }
    weft_value *outv = weft_map();
    weft_map_put(outv, "count", weft_long(n));
    weft_map_put(outv, "resumed_from", weft_long(from));
    return outv;
}

static int64_t unix_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static weft_value *heartbeat_spin(weft_value *input) {
    int64_t beats, interval, until;
    if (!fields(input, "heartbeat_spin input") || !long_field(input, "beats", &beats) ||
        !long_field(input, "interval_ms", &interval) || !long_field(input, "until_ms", &until))
        return NULL;
    if (interval < 0) interval = 0;
    if (interval > 1000000) interval = 1000000;
    for (int64_t i = 0; i < beats; i++) {
        if (weft_heartbeat()) return weft_error("cancelled", "heartbeat_spin cancelled", true, NULL);
        struct timespec ts = {(time_t)(interval / 1000), (long)(interval % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (unix_ms() >= until) return weft_string("done");
    for (;;) spins++;
}

/* The state of the running tally, read by its query handlers. */
typedef struct tally_state {
    int64_t sum, count;
} tally_state;

static tally_state tallied;

static weft_value *query_state(const weft_value *input, void *data) {
    (void)input;
    const tally_state *st = data;
    weft_value *v = weft_map();
    weft_map_put(v, "sum", weft_long(st->sum));
    weft_map_put(v, "count", weft_long(st->count));
    return v;
}

static weft_value *query_echo(const weft_value *input, void *data) {
    (void)data;
    return input ? weft_value_clone(input) : weft_null();
}

static weft_value *query_fail(const weft_value *input, void *data) {
    (void)input, (void)data;
    return weft_error("refused", "query refused", true, NULL);
}

static weft_value *query_schedule(const weft_value *input, void *data) {
    (void)input, (void)data;
    weft_value *null = weft_null();
    weft_future *f = weft_execute_activity("echo", null, NULL);
    weft_value_free(null);
    weft_future_get(f, NULL);
    return weft_null();
}

static weft_value *query_wait(const weft_value *input, void *data) {
    (void)input, (void)data;
    weft_future_get(weft_start_timer(1000), NULL);
    return weft_null();
}

static weft_value *query_spin(const weft_value *input, void *data) {
    (void)input, (void)data;
    for (;;) spins++;
}

static weft_value *tally(weft_value *input) {
    int64_t signals;
    if (!fields(input, "tally input") || !long_field(input, "signals", &signals)) return NULL;
    tallied = (tally_state){0, 0};
    weft_set_query_handler("state", query_state, &tallied);
    weft_set_query_handler("echo", query_echo, NULL);
    weft_set_query_handler("fail", query_fail, NULL);
    weft_set_query_handler("schedule", query_schedule, NULL);
    weft_set_query_handler("wait", query_wait, NULL);
    weft_set_query_handler("spin", query_spin, NULL);
    while (tallied.count < signals) {
        weft_value *v = NULL;
        weft_outcome o = weft_future_get(weft_wait_signal("add", WEFT_NO_TIMEOUT), &v);
        if (o == WEFT_OUTCOME_SUSPENDED) return NULL;
        int64_t n = 0;
        bool ok = o == WEFT_OUTCOME_VALUE && weft_as_long(v, &n);
        weft_value_free(v);
        if (!ok) return weft_error("weft.invalid_input", "the signal add is not a long", true, NULL);
        tallied.sum += n;
        tallied.count++;
    }
    return weft_long(tallied.sum);
}

/* TESTKIT_PARENT_CHILD is the workflow parent starts: another one makes a
 * version of the kit whose parent diverges from this one's journals (the
 * replay-check test builds cmd/weft/testdata/testkit-c-v2.wasm so). */
#ifndef TESTKIT_PARENT_CHILD
#define TESTKIT_PARENT_CHILD "tally"
#endif

static weft_value *parent(weft_value *input) {
    const char *wid, *policy, *module;
    int64_t signals;
    if (!fields(input, "parent input") || !string_field(input, "workflow_id", &wid) || !string_field(input, "policy", &policy) ||
        !string_field(input, "module", &module) || !long_field(input, "signals", &signals))
        return NULL;
    weft_child_workflow_options opts = {.module = module, .workflow_id = wid, .parent_close_policy = policy};
    weft_value *arg = weft_map();
    weft_map_put(arg, "signals", weft_long(signals));
    weft_value *sum = NULL;
    weft_outcome o = weft_future_get(weft_execute_child_workflow(TESTKIT_PARENT_CHILD, arg, &opts), &sum);
    weft_value_free(arg);
    switch (o) {
    case WEFT_OUTCOME_SUSPENDED:
        return NULL;
    case WEFT_OUTCOME_ERROR: {
        const char *type = "error", *message = "";
        bool nr = false;
        weft_as_string(weft_map_get(sum, "type"), &type, NULL);
        weft_as_string(weft_map_get(sum, "message"), &message, NULL);
        weft_as_bool(weft_map_get(sum, "non_retryable"), &nr);
        weft_value *e = weft_error(type, message, nr, NULL);
        weft_value_free(sum);
        return e;
    }
    default:
        return sum;
    }
}

/* step_future schedules the echo of {key: i}. */
static weft_future *step_future(const char *key, int64_t i) {
    weft_value *arg = weft_map();
    weft_map_put(arg, key, weft_long(i));
    weft_future *f = weft_execute_activity("echo", arg, NULL);
    weft_value_free(arg);
    return f;
}

/* saga_wait waits for f or the workflow's cancel request: 0 when f
 * resolved (its error, if any, in *err), 1 for the cancel, -1 when
 * suspended. */
static int saga_wait(weft_future *f, weft_future *cancel, weft_value **err) {
    weft_future *fs[2] = {f, cancel};
    int r = weft_await_any(fs, 2);
    if (r != 0) return r;
    weft_value *v = NULL;
    if (weft_future_get(f, &v) == WEFT_OUTCOME_ERROR) {
        *err = v;
        return 0;
    }
    weft_value_free(v);
    return 0;
}

static weft_value *saga(weft_value *input) {
    int64_t steps, hold;
    bool child = false;
    if (!fields(input, "saga input") || !long_field(input, "steps", &steps) || !long_field(input, "hold_ms", &hold)) return NULL;
    weft_as_bool(weft_map_get(input, "child"), &child);
    weft_future *cancel = weft_cancel_future();
    weft_value *failure = NULL;
    int64_t done = 0;
    int r = 0;
    for (int64_t i = 1; i <= steps && r == 0 && !failure; i++) {
        r = saga_wait(step_future("do", i), cancel, &failure);
        if (r == 0 && !failure) done = i;
    }
    if (r == 0 && !failure) {
        weft_future *c = NULL;
        if (child) {
            weft_value *arg = weft_map();
            weft_map_put(arg, "signals", weft_long(1));
            c = weft_execute_child_workflow("tally", arg, NULL);
            weft_value_free(arg);
        }
        weft_value *arg = weft_map();
        weft_map_put(arg, "ms", weft_long(hold));
        weft_future *s = weft_execute_activity("sleep", arg, NULL);
        weft_value_free(arg);
        r = saga_wait(s, cancel, &failure);
        if (r == 0 && !failure && c) r = saga_wait(c, cancel, &failure);
    }
    if (r < 0) return NULL;
    if (r == 0 && !failure) return weft_long(steps);
    weft_log(WEFT_INFO, "compensating");
    for (int64_t i = done; i >= 1; i--) {
        weft_outcome o = weft_future_get(step_future("undo", i), NULL);
        if (o == WEFT_OUTCOME_SUSPENDED) {
            weft_value_free(failure);
            return NULL;
        }
        if (o == WEFT_OUTCOME_ERROR) {
            weft_value_free(failure);
            return weft_error("compensation_failed", "a compensation failed", true, NULL);
        }
    }
    if (!failure) return weft_error("cancelled", "workflow: the workflow was asked to cancel", true, NULL);
    const char *type = "error", *message = "";
    weft_as_string(weft_map_get(failure, "type"), &type, NULL);
    weft_as_string(weft_map_get(failure, "message"), &message, NULL);
    weft_value *e = weft_error(type, message, true, NULL);
    weft_value_free(failure);
    return e;
}

static int64_t chain_done;

static weft_value *query_done(const weft_value *input, void *data) {
    (void)input, (void)data;
    return weft_long(chain_done);
}

static weft_value *chain(weft_value *input) {
    int64_t runs, done;
    if (!fields(input, "chain input") || !long_field(input, "runs", &runs) || !long_field(input, "done", &done)) return NULL;
    chain_done = done;
    weft_set_query_handler("done", query_done, NULL);
    weft_value *arg = weft_long(done), *echoed = NULL;
    weft_outcome o = weft_future_get(weft_execute_activity("echo", arg, NULL), &echoed);
    weft_value_free(arg);
    if (o == WEFT_OUTCOME_SUSPENDED) return NULL;
    if (o == WEFT_OUTCOME_ERROR) return weft_error("echo_failed", "echo failed", true, echoed);
    int64_t n = 0;
    bool ok = weft_as_long(echoed, &n);
    weft_value_free(echoed);
    if (!ok) return weft_error("weft.invalid_input", "echo returned no long", true, NULL);
    if (n + 1 < runs) {
        weft_value *next = weft_map();
        weft_map_put(next, "runs", weft_long(runs));
        weft_map_put(next, "done", weft_long(n + 1));
        return weft_continue_as_new(next);
    }
    weft_value *outv = weft_map();
    weft_map_put(outv, "runs", weft_long(n + 1));
    weft_map_put(outv, "history_length", weft_long(weft_history_length()));
    return outv;
}

WEFT_INIT(register_activities) {
    weft_register_workflow("chain", chain);
    weft_register_activity("echo", echo);
    weft_register_activity("sleep", sleep_ms);
    weft_register_activity("spin", spin);
    weft_register_activity("fail", fail);
    weft_register_activity("trap", trap);
    weft_register_activity("grow", grow);
    weft_register_activity("count", count);
    weft_register_workflow("parent", parent);
    weft_register_workflow("tally", tally);
    weft_register_workflow("saga", saga);
    weft_register_activity("heartbeat_spin", heartbeat_spin);
}
