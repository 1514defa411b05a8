/*
 * wfbench-c is the C twin of testdata/wfbench (the workflow guest of the
 * daemon's workflow benchmarks): an echo activity and the workflow
 * fanout_wait, which runs n echo activities at once, reads their results,
 * then waits for signals "tick" until one carries "stop".
 *
 * The committed cmd/weft/testdata/wfbench-c.wasm is built by
 * scripts/build-wasm-c.sh.
 */
#include <stdlib.h>
#include <string.h>

#include "weft.h"

static weft_value *echo(weft_value *in) { return in; }

static weft_value *fanout_wait(weft_value *in) {
    int64_t n = 0;
    weft_as_long(in, &n);
    weft_future **fs = malloc(sizeof *fs * (size_t)(n > 0 ? n : 1));
    for (int64_t i = 0; i < n; i++) {
        weft_value *v = weft_long(i);
        fs[i] = weft_execute_activity("echo", v, NULL);
        weft_value_free(v);
    }
    if (!weft_await_all(fs, (size_t)n)) {
        free(fs);
        return NULL;
    }
    int64_t sum = 0;
    for (int64_t i = 0; i < n; i++) {
        weft_value *out = NULL;
        if (weft_future_get(fs[i], &out) != WEFT_OUTCOME_VALUE) {
            free(fs);
            return weft_error("echo_failed", "an echo activity failed", true, out);
        }
        int64_t x = 0;
        weft_as_long(out, &x);
        sum += x;
        weft_value_free(out);
    }
    free(fs);
    for (;;) {
        weft_value *tick = NULL;
        weft_outcome o = weft_future_get(weft_wait_signal("tick", WEFT_NO_TIMEOUT), &tick);
        if (o == WEFT_OUTCOME_SUSPENDED) return NULL;
        const char *s = NULL;
        size_t len = 0;
        bool stop = weft_as_string(tick, &s, &len) && len == 4 && memcmp(s, "stop", 4) == 0;
        weft_value_free(tick);
        if (stop) return weft_long(sum);
    }
}

WEFT_INIT(register_functions) {
    weft_register_activity("echo", echo);
    weft_register_workflow("fanout_wait", fanout_wait);
}
