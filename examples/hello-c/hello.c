/*
 * hello-c is a hello-world weft plugin in C: one activity, "hello", that
 * greets the name it is given, like examples/hello-go.
 *
 * Build it as a WASI reactor from this directory (see README.md):
 *
 *   clang --target=wasm32-wasi -O2 -std=c11 -I ../../sdk-wasm/c \
 *         -mexec-model=reactor -Wl,--strip-all -o hello.wasm hello.c ../../sdk-wasm/c/weft.c
 */
#include <stdlib.h>
#include <string.h>

#include "weft.h"

static int is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/* concat returns a + b[:n] in a new buffer, without a terminating NUL. */
static char *concat(const char *a, const char *b, size_t n) {
    size_t la = strlen(a);
    char *s = malloc(la + n + 1);
    if (!s) __builtin_trap(); /* out of memory: the host reports memory_limit */
    memcpy(s, a, la);
    memcpy(s + la, b, n);
    return s;
}

/* hello takes {"name": "..."} and returns {"greeting": "hello, ...!"}. An
 * empty name is an error no retry can fix, so it is non-retryable. */
static weft_value *hello(weft_value *input) {
    const weft_value *field = weft_map_get(input, "name");
    const char *name = "";
    size_t n = 0;
    if (!weft_is_null(field) && !weft_as_string(field, &name, &n))
        return weft_error("weft.invalid_input", "name must be a string", true, NULL);

    while (n > 0 && is_space(name[0])) name++, n--;
    while (n > 0 && is_space(name[n - 1])) n--;
    if (n == 0) return weft_error("invalid_name", "name is empty", true, NULL);

    char *line = concat("greeting name=", name, n);
    weft_log_n(WEFT_INFO, line, 14 + n);
    free(line);

    char *text = concat("hello, ", name, n);
    text[7 + n] = '!';
    weft_value *out = weft_map_put(weft_map(), "greeting", weft_string_n(text, 7 + n + 1));
    free(text);
    return out;
}

/* Functions are registered from a constructor, which the reactor's
 * _initialize runs before the host reads the manifest. */
WEFT_INIT(register_hello) {
    weft_register_activity("hello", hello);
}
