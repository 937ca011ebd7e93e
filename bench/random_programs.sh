#!/usr/bin/env bash
# bench/random_programs.sh [COUNT] [SEED]: a long run of the random differential tester
# (tests/e2e/random_programs.py) on the CPU and on the simulated device, COUNT programs each (default 10000)
# from SEED (default: a new one, printed, so that a failure can be reproduced with --seed SEED --only K).
# Run from anywhere, with tgc built in build/; JOBS=N sets the parallel jobs (default: all cores).
# The kernels these programs compile go to a temporary cache, removed at the end, not to ~/.cache/tgc.
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-10000}
seed=${2:-$(( $(date +%s) % 1000000 ))}
jobs=${JOBS:-$(nproc)}
[ -x build/tgc ] || { echo "bench/random_programs.sh: build tgc first (build/tgc is missing)" >&2; exit 2; }
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
status=0
summary=()
for device in cpu sim; do
  start=$(date +%s)
  log="$cache/$device.log"
  XDG_CACHE_HOME="$cache" /usr/bin/python3 tests/e2e/random_programs.py --tgc build/tgc --device "$device" \
    --count "$count" --seed "$seed" --jobs "$jobs" | tee "$log" || status=1
  seconds=$(( $(date +%s) - start ))
  summary+=("$device: $(tail -n 1 "$log") in ${seconds} s (seed $seed)")
done
printf '%s\n' "${summary[@]}"
exit $status
