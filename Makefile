# weft — make targets. `make help` lists them.

GO          ?= go
DATA        ?= ./weft-data
ADDR        ?= 127.0.0.1:7700
BIN         := bin/weft
GUEST_PKGS  := ./codec ./sdk-wasm/... ./plugins/...
# Host-side packages the linter reads for the build platform; guest code is
# read again as wasip1, the platform it runs on (plugins and examples only
# there: off wasm their SDK calls are stubs that panic).
LINT_PKGS   := ./cmd/... ./codec/... ./host/... ./runtime/... ./sdk-wasm/... ./store/...
LINT_GUEST  := $(GUEST_PKGS) ./examples/...
# The comparison benchmarks (Extism, River) are a module of their own, so
# that weft's go.mod requires neither; the targets below enter it.
COMPARE     := cmd/compare
# Tools run at pinned versions through the module proxy; neither touches
# go.mod. golangci-lint keeps its cache in the user cache dir.
GOFUMPT     := mvdan.cc/gofumpt@v0.9.2
GOLANGCI    := github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

.PHONY: build
build: ## build the weft binary into bin/
	$(GO) build -buildvcs=auto -o $(BIN) ./cmd/weft

.PHONY: run
run: build ## run the daemon on ./weft-data and deploy the bundled plugins
	./scripts/run.sh $(BIN) $(DATA) $(ADDR)

.PHONY: test
test: ## run every test with the race detector (the comparisons' smoke tests too)
	@[ -n "$$WEFT_TEST_POSTGRES" ] || echo "note: WEFT_TEST_POSTGRES is unset, so the PostgreSQL suites (store/postgres) are skipped; see scripts/pg-test.sh"
	$(GO) test -race -count=1 ./...
	cd $(COMPARE) && $(GO) test -count=1 ./...

.PHONY: test-long
test-long: ## every test with the long crash and soak variants (WEFT_LONG_TESTS=1), as CI runs them
	WEFT_LONG_TESTS=1 $(GO) test -race -count=1 -timeout 60m ./...

.PHONY: test-short
test-short: ## run the tests in short mode (no race detector)
	$(GO) test -short -count=1 ./...

.PHONY: bench
bench: ## run the Go benchmarks and the seeds' Avro Value benchmark
	$(GO) test -run='^$$' -bench=. -benchmem ./...
	$(GO) run ./cmd/weft bench avro-value

.PHONY: bench-compare
bench-compare: ## weft beside Extism (echo call) and River (load), in one run each (cmd/compare)
	cd $(COMPARE) && $(GO) test -run='^$$' -bench=. -benchmem ./...

.PHONY: fuzz
fuzz: ## run each codec fuzz target for FUZZTIME (default 30s)
	@for t in $$($(GO) test -list '^Fuzz' ./codec/ | grep ^Fuzz); do \
		$(GO) test -run='^$$' -fuzz="^$$t$$" -fuzztime=$${FUZZTIME:-30s} ./codec/ || exit 1; done
	@for t in $$($(GO) test -list '^Fuzz' ./codec/schema/ | grep ^Fuzz); do \
		$(GO) test -run='^$$' -fuzz="^$$t$$" -fuzztime=$${FUZZTIME:-30s} ./codec/schema/ || exit 1; done

.PHONY: fmt
fmt: ## format the Go sources with gofumpt
	$(GO) run $(GOFUMPT) -w .

.PHONY: lint
lint: ## golangci-lint (.golangci.yml: import arrows, staticcheck, unused, errcheck, vet…), host and wasip1
	$(GO) run $(GOLANGCI) run $(LINT_PKGS)
	cd $(COMPARE) && $(GO) run $(GOLANGCI) run ./...
	$(GO) run -exec "env GOOS=wasip1 GOARCH=wasm" $(GOLANGCI) run $(LINT_GUEST)

.PHONY: check
check: ## gofumpt, vet, golangci-lint, go mod tidy (both modules), and the wasip1 cross-build of guest packages
	@out=$$($(GO) run $(GOFUMPT) -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofumpt would change (make fmt):"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	cd $(COMPARE) && $(GO) vet ./...
	$(MAKE) --no-print-directory lint
	$(GO) mod tidy && git diff --exit-code go.mod go.sum
	cd $(COMPARE) && $(GO) mod tidy && git diff --exit-code go.mod go.sum
	@n=$$($(GO) mod graph | grep -ci 'extism\|riverqueue'); if [ "$$n" != 0 ]; then echo "go.mod of weft requires Extism or River ($$n edges); they belong to $(COMPARE)"; exit 1; fi
	GOOS=wasip1 GOARCH=wasm $(GO) build $(GUEST_PKGS)
	GOOS=wasip1 GOARCH=wasm $(GO) vet $(GUEST_PKGS)

.PHONY: wasm
wasm: ## rebuild the committed Go .wasm guests (plugins, examples, test guests)
	./scripts/build-wasm.sh

.PHONY: wasm-c
wasm-c: ## install clang + wasi-libc if missing (apt), then rebuild the committed C guests
	@if ! printf '#include <stdlib.h>\n' | clang --target=wasm32-wasi -x c -c -o /dev/null - 2>/dev/null; then \
		echo "installing the C wasm toolchain (clang, lld, wasi-libc)"; \
		SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$SUDO apt-get update && $$SUDO apt-get install -y clang lld wasi-libc libclang-rt-14-dev-wasm32; fi
	./scripts/build-wasm-c.sh

.PHONY: clean
clean: ## remove build output
	rm -rf bin
