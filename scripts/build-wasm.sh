#!/usr/bin/env bash
# Rebuilds the committed Go .wasm guests (`make wasm`): the stock plugins,
# the host's test guests and the Go example. The .wasm files are committed,
# so `make test` needs only Go; host/wasm_test.go checks that they match
# their sources. Each guest's source names the same command in its doc
# comment.
set -euo pipefail
cd "$(dirname "$0")/.."

# build OUT PKG: one WASI reactor from a main package.
build() {
	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -o "$1" "$2"
	echo "$1: $(wc -c <"$1") bytes"
}

build plugins/testkit/testkit.wasm ./plugins/testkit
build host/testdata/hostile.wasm ./host/testdata/hostile
build host/testdata/wfkit.wasm ./host/testdata/wfkit
build examples/hello-go/hello.wasm ./examples/hello-go
build examples/deploy-pipeline/go/pipeline.wasm ./examples/deploy-pipeline/go
build cmd/weft/testdata/wfbench.wasm ./cmd/weft/testdata/wfbench
build cmd/weft/testdata/wftimeouts.wasm ./cmd/weft/testdata/wftimeouts
