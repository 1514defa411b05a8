#!/usr/bin/env bash
# make run: start the daemon on DATA at ADDR, deploy the bundled plugins, and
# keep the daemon in the foreground until Ctrl-C.
set -euo pipefail
bin=${1:-bin/weft}
data=${2:-./weft-data}
addr=${3:-127.0.0.1:7700}

"$bin" serve --data "$data" --addr "$addr" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid' INT TERM

# Wait until this daemon listens: its pid and address are in the lock file.
# A daemon that finds the data directory in use exits at once; the script
# then stops without deploying anything to the daemon that holds it.
for _ in $(seq 1 100); do
	if ! kill -0 $pid 2>/dev/null; then wait $pid; exit 1; fi
	if grep -q "\"pid\":$pid,\"addr\"" "$data/weft.lock" 2>/dev/null; then break; fi
	sleep 0.1
done
if ! kill -0 $pid 2>/dev/null; then wait $pid; exit 1; fi

export WEFT_ADDR=$addr WEFT_DATA=$data
# The stock plugins, named after their folders, and the examples.
for wasm in plugins/*/*.wasm; do
	[ -e "$wasm" ] || continue
	"$bin" deploy "$wasm" --name "$(basename "$(dirname "$wasm")")"
done
"$bin" deploy examples/hello-go/hello.wasm --name hello
"$bin" deploy examples/hello-c/hello.wasm --name hello-c
"$bin" deploy examples/deploy-pipeline/go/pipeline.wasm --name pipeline
"$bin" deploy examples/deploy-pipeline/c/pipeline.wasm --name pipeline-c

cat <<TXT

weft is running at http://$addr (data in $data, admin token in $data/admin.token).
Try:
  $bin run testkit echo --input '{"hello":"world"}'
  $bin run testkit count --input '{"to":1000000,"checkpoint_every":1000}' --background
  $bin run hello hello --input '{"name":"Ada"}'
  $bin tasks list
See examples/deploy-pipeline for a workflow with activities, a signal and a rollback.
Stop with Ctrl-C.
TXT
wait $pid
