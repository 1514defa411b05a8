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

for _ in $(seq 1 100); do
	if WEFT_ADDR=$addr WEFT_DATA=$data "$bin" modules list >/dev/null 2>&1; then break; fi
	if ! kill -0 $pid 2>/dev/null; then wait $pid; exit 1; fi
	sleep 0.1
done

export WEFT_ADDR=$addr WEFT_DATA=$data
for wasm in plugins/*/*.wasm; do
	[ -e "$wasm" ] || continue
	"$bin" deploy "$wasm" --name "$(basename "$(dirname "$wasm")")"
done

cat <<TXT

weft is running at http://$addr (data in $data, admin token in $data/admin.token).
Try:
  $bin run testkit echo --input '{"hello":"world"}'
  $bin run testkit count --input '{"to":1000000,"checkpoint_every":1000}' --background
  $bin tasks list
Stop with Ctrl-C.
TXT
wait $pid
