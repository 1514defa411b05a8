/*
 * deploy-pipeline in C: the same durable workflow as the Go version
 * (../go/main.go), written with the C SDK (sdk-wasm/c). The workflow
 * "deploy" builds and tests a release, waits for the signal "approve" (with
 * a timeout), deploys it with retries, and rolls back when the deploy fails
 * for good. See README.md for a walk-through with the weft CLI.
 *
 * The committed pipeline.wasm is built from the repository root by
 * scripts/build-wasm-c.sh, that is:
 *
 *   clang --target=wasm32-wasi -O2 -std=c11 -Wall -Wextra -Werror -I sdk-wasm/c \
 *         -mexec-model=reactor -Wl,--strip-all \
 *         -o examples/deploy-pipeline/c/pipeline.wasm \
 *         examples/deploy-pipeline/c/pipeline.c sdk-wasm/c/weft.c
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "weft.h"

/* ---------------------------------------------------------------------
 * Small helpers
 * ------------------------------------------------------------------- */

/* str returns the string under key of map v, or def. */
static const char *str(const weft_value *v, const char *key, const char *def) {
    const char *s;
    if (weft_as_string(weft_map_get(v, key), &s, NULL)) return s;
    return def;
}

/* flag returns the boolean under key of map v, false when absent. */
static bool flag(const weft_value *v, const char *key) {
    bool b = false;
    weft_as_bool(weft_map_get(v, key), &b);
    return b;
}

/* num returns the long under key of map v, or def. */
static int64_t num(const weft_value *v, const char *key, int64_t def) {
    int64_t n;
    if (weft_as_long(weft_map_get(v, key), &n)) return n;
    return def;
}

/* forward fails the workflow with the error Value err (owned) of an
 * activity, keeping its type. */
static weft_value *forward(weft_value *err) {
    char type[128], message[512];
    snprintf(type, sizeof type, "%s", str(err, "type", "error"));
    snprintf(message, sizeof message, "%s", str(err, "message", ""));
    bool non_retryable = flag(err, "non_retryable");
    weft_value_free(err);
    return weft_error(type, message, non_retryable, NULL);
}

/* ship_request is {service, version, fail}. */
static weft_value *ship_request(const char *service, const char *version, bool fail) {
    weft_value *m = weft_map();
    weft_map_put(m, "service", weft_string(service));
    weft_map_put(m, "version", weft_string(version));
    weft_map_put(m, "fail", weft_bool(fail));
    return m;
}

/* ---------------------------------------------------------------------
 * The workflow
 *
 * Every weft_future_get may answer WEFT_OUTCOME_SUSPENDED: the result is
 * not there yet, and the workflow returns at once (its return value is
 * ignored). The host runs it again from the start when the result arrives,
 * answering every earlier step from the task's journal, so the code must
 * decide only from its input and its futures' results.
 * ------------------------------------------------------------------- */

static weft_value *deploy(weft_value *in) {
    const char *service = str(in, "service", ""), *version = str(in, "version", "");
    if (!*service || !*version)
        return weft_error("invalid_release", "service and version are required", true, NULL);

    weft_retry_policy retry = {.max_attempts = 3, .initial_interval_ms = 100};
    weft_activity_options opts = {.timeout_ms = 60000, .retry = &retry};

    /* build */
    weft_value *art = NULL;
    switch (weft_future_get(weft_execute_activity("build", in, &opts), &art)) {
    case WEFT_OUTCOME_VALUE:
        break;
    case WEFT_OUTCOME_SUSPENDED:
        return NULL;
    default:
        return forward(art);
    }
    char artifact[256];
    snprintf(artifact, sizeof artifact, "%s", str(art, "name", ""));
    weft_value_free(art);

    /* test */
    weft_value *treq = weft_map();
    weft_map_put(treq, "artifact", weft_string(artifact));
    weft_map_put(treq, "fail", weft_bool(flag(in, "fail_tests")));
    weft_value *report = NULL;
    weft_outcome o = weft_future_get(weft_execute_activity("test", treq, &opts), &report);
    weft_value_free(treq);
    if (o == WEFT_OUTCOME_SUSPENDED) return NULL;
    if (o != WEFT_OUTCOME_VALUE) return forward(report);
    int64_t passed = num(report, "passed", 0), failed = num(report, "failed", 0);
    weft_value_free(report);
    if (failed > 0) {
        char msg[128];
        snprintf(msg, sizeof msg, "%" PRId64 " of %" PRId64 " tests failed", failed, passed + failed);
        return weft_error("tests_failed", msg, true, NULL);
    }
    char line[320];
    snprintf(line, sizeof line, "waiting for approval artifact=%s", artifact);
    weft_log(WEFT_INFO, line);

    /* approval */
    int64_t timeout = num(in, "approval_timeout_ms", 0);
    if (timeout <= 0) timeout = 3600 * 1000;
    weft_value *approval = NULL;
    o = weft_future_get(weft_wait_signal("approve", timeout), &approval);
    if (o == WEFT_OUTCOME_SUSPENDED) return NULL;
    if (o == WEFT_OUTCOME_TIMEOUT) {
        char msg[320];
        snprintf(msg, sizeof msg, "nobody approved %s within %" PRId64 "ms", artifact, timeout);
        return weft_error("approval_timeout", msg, true, NULL);
    }
    char by[128];
    snprintf(by, sizeof by, "%s", str(approval, "by", ""));
    if (!flag(approval, "approved")) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s rejected %s: %s", by, artifact, str(approval, "comment", ""));
        weft_value_free(approval);
        return weft_error("rejected", msg, true, NULL);
    }
    weft_value_free(approval);
    snprintf(line, sizeof line, "approved by=%s", by);
    weft_log(WEFT_INFO, line);

    /* ship, with up to five attempts, else roll back */
    weft_retry_policy ship_retry = {.max_attempts = 5, .initial_interval_ms = 100, .backoff_coefficient = 2,
                                    .max_interval_ms = 1000};
    weft_activity_options ship_opts = {.timeout_ms = 60000, .retry = &ship_retry};
    weft_value *req = ship_request(service, version, flag(in, "fail_deploy"));
    weft_value *shipped = NULL;
    o = weft_future_get(weft_execute_activity("ship", req, &ship_opts), &shipped);
    weft_value_free(req);
    if (o == WEFT_OUTCOME_SUSPENDED) return NULL;
    if (o != WEFT_OUTCOME_VALUE) {
        char why[512];
        snprintf(why, sizeof why, "%s: %s", str(shipped, "type", "error"), str(shipped, "message", ""));
        weft_value_free(shipped);
        const char *previous = str(in, "previous", "previous");
        snprintf(line, sizeof line, "deploy failed, rolling back to=%s", previous);
        weft_log(WEFT_WARN, line);
        weft_value *back = ship_request(service, previous, false);
        weft_value *rolled = NULL;
        o = weft_future_get(weft_execute_activity("rollback", back, &opts), &rolled);
        weft_value_free(back);
        if (o == WEFT_OUTCOME_SUSPENDED) return NULL;
        char msg[1024];
        if (o != WEFT_OUTCOME_VALUE) {
            snprintf(msg, sizeof msg, "deploy failed (%s) and so did the rollback (%s)", why, str(rolled, "message", ""));
            weft_value_free(rolled);
            return weft_error("rollback_failed", msg, true, NULL);
        }
        weft_value_free(rolled);
        snprintf(msg, sizeof msg, "deploy of %s %s failed (%s); rolled back to %s", service, version, why, previous);
        return weft_error("deploy_failed", msg, true, NULL);
    }
    weft_value_free(shipped);

    /* the workflow's deterministic time, not the wall clock */
    time_t now = (time_t)(weft_now() / 1000000000);
    char at[32];
    strftime(at, sizeof at, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now)); /* one thread: gmtime's buffer is safe */

    weft_value *out = weft_map();
    weft_map_put(out, "service", weft_string(service));
    weft_map_put(out, "version", weft_string(version));
    weft_map_put(out, "artifact", weft_string(artifact));
    weft_map_put(out, "approved_by", weft_string(by));
    weft_map_put(out, "deployed_at", weft_string(at));
    return out;
}

/* ---------------------------------------------------------------------
 * The activities
 * ------------------------------------------------------------------- */

/* build names the artifact and derives a digest (FNV-1a) from it. */
static weft_value *build(weft_value *in) {
    char name[256];
    snprintf(name, sizeof name, "%s-%s.tar.gz", str(in, "service", ""), str(in, "version", ""));
    uint64_t h = 14695981039346656037ULL;
    for (const char *p = name; *p; p++) h = (h ^ (uint8_t)*p) * 1099511628211ULL;
    char digest[32];
    snprintf(digest, sizeof digest, "fnv1a:%016" PRIx64, h);
    char line[320];
    snprintf(line, sizeof line, "built artifact=%s", name);
    weft_log(WEFT_INFO, line);
    weft_value *out = weft_map();
    weft_map_put(out, "name", weft_string(name));
    weft_map_put(out, "digest", weft_string(digest));
    return out;
}

/* test reports 42 passing tests, or 3 failures when asked to fail. */
static weft_value *test(weft_value *in) {
    if (!*str(in, "artifact", "")) return weft_error("invalid_artifact", "no artifact", true, NULL);
    bool fail = flag(in, "fail");
    weft_value *out = weft_map();
    weft_map_put(out, "passed", weft_long(fail ? 39 : 42));
    weft_map_put(out, "failed", weft_long(fail ? 3 : 0));
    return out;
}

/* ship deploys a version; with fail set every attempt fails with a
 * retryable error, as a cluster that does not come up would. */
static weft_value *ship(weft_value *in) {
    char msg[320];
    snprintf(msg, sizeof msg, "%s %s", str(in, "service", ""), str(in, "version", ""));
    if (flag(in, "fail")) {
        char why[400];
        snprintf(why, sizeof why, "%s did not become healthy", msg);
        return weft_error("unhealthy", why, false, NULL);
    }
    char line[400];
    snprintf(line, sizeof line, "deployed %s", msg);
    weft_log(WEFT_INFO, line);
    return weft_string(msg);
}

/* rollback puts the previous version back. */
static weft_value *rollback(weft_value *in) {
    char line[320];
    snprintf(line, sizeof line, "rolled back %s to %s", str(in, "service", ""), str(in, "version", ""));
    weft_log(WEFT_INFO, line);
    return weft_string(str(in, "version", ""));
}

WEFT_INIT(register_functions) {
    weft_register_workflow("deploy", deploy);
    weft_register_activity("build", build);
    weft_register_activity("test", test);
    weft_register_activity("ship", ship);
    weft_register_activity("rollback", rollback);
}
