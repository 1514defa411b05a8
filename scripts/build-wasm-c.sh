#!/usr/bin/env bash
# Builds every C guest of weft with clang and wasi-libc (`make wasm-c`):
# the C SDK (sdk-wasm/c) compiled into plugins/testkit-c, examples/hello-c,
# examples/deploy-pipeline/c and the benchmark guest cmd/weft/testdata/wfbench-c.
# The .wasm files are committed, so `make test` needs only Go.
#
# Needs clang, lld, wasi-libc and libclang-rt-14-dev-wasm32 (Debian);
# `make wasm-c` installs them when clang is missing. Override the compiler
# with CC=... (for example CC=clang-14).
set -euo pipefail
cd "$(dirname "$0")/.."

CC=${CC:-clang}
CFLAGS=(--target=wasm32-wasi -O2 -std=c11 -Wall -Wextra -Werror -I sdk-wasm/c)
LDFLAGS=(-mexec-model=reactor -Wl,--strip-all)

# build OUT SRC...: one reactor module from SRC and the SDK.
build() {
	local out=$1
	shift
	"$CC" "${CFLAGS[@]}" "${LDFLAGS[@]}" -o "$out" "$@" sdk-wasm/c/weft.c
	chmod 0644 "$out" # a committed fixture, not a program
	echo "$out: $(wc -c <"$out") bytes"
}

# The SDK alone must compile cleanly as a library object too.
"$CC" "${CFLAGS[@]}" -c -o /dev/null sdk-wasm/c/weft.c

build plugins/testkit-c/testkit-c.wasm plugins/testkit-c/testkit.c
# A version whose parent starts another child workflow: --check-replay refuses it.
build cmd/weft/testdata/testkit-c-v2.wasm -DTESTKIT_PARENT_CHILD='"chain"' plugins/testkit-c/testkit.c
build examples/hello-c/hello.wasm examples/hello-c/hello.c
build examples/deploy-pipeline/c/pipeline.wasm examples/deploy-pipeline/c/pipeline.c
build cmd/weft/testdata/wfbench-c.wasm cmd/weft/testdata/wfbench-c/wfbench.c
