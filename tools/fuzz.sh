#!/usr/bin/env bash
# Fuzzes one part of tgc with libFuzzer, under AddressSanitizer and UndefinedBehaviorSanitizer.
#
#   bash tools/fuzz.sh TARGET SECONDS [LIBFUZZER-OPTION]...
#
# TARGET is frontend (scripts: parse, build, optimize, with and without a device), npy (the .npy reader) or repl
# (piped REPL sessions). Installs what is missing (clang-19, libFuzzer), builds the harness in build-fuzz/ (the
# first time takes minutes), seeds it from the repository's scripts, sessions and arrays, and runs it for
# SECONDS. The corpus grows in build-fuzz/corpus/TARGET across runs. Prints the executions and the coverage;
# exits 0 when nothing was found, 1 when something was (the input is saved in build-fuzz/findings/TARGET/).
set -euo pipefail
cd "$(dirname "$0")/.."
usage="usage: bash tools/fuzz.sh frontend|npy|repl SECONDS [LIBFUZZER-OPTION]..."
[ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }
target=$1 seconds=$2
shift 2
case "$target" in frontend | npy | repl) ;; *) echo "fuzz.sh: unknown target '$target'; $usage" >&2; exit 2 ;; esac
[[ "$seconds" =~ ^[0-9]+$ ]] || { echo "fuzz.sh: SECONDS must be a whole number, got '$seconds'" >&2; exit 2; }

source tools/packages.sh
install_missing "${TGC_PACKAGES[@]}" clang-19 libfuzzer-19-dev libclang-rt-19-dev

build=build-fuzz
if [ ! -f "$build/build.ninja" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang-19 \
    -DCMAKE_CXX_COMPILER=clang++-19 -DTGC_FUZZ=ON -DTGC_SANITIZE=address,undefined > /dev/null
fi
cmake --build "$build" --target "tgc_fuzz_$target"

seeds="$build/seeds/$target" corpus="$build/corpus/$target" findings="$build/findings/$target"
rm -rf "$seeds"
mkdir -p "$corpus" "$findings"
/usr/bin/python3 tests/fuzz/seeds.py "$target" "$seeds"
dictionary=tests/fuzz/tg.dict
[ "$target" = npy ] && dictionary=tests/fuzz/npy.dict

# A huge allocation is an "out of memory" error in tgc, not a crash: the allocator returns null for it. Leaks
# are not looked for after each input (that halved the executions a second: tgc keeps kernel caches and
# interned names that grow as inputs come); the sanitizer build of the test suite checks for them at the exit
# of every test. Returns of stack frames still in use are not looked for either (ASan's fake stack took 45% of
# the frontend harness's time); every other check of AddressSanitizer is on.
export ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=0:detect_stack_use_after_return=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
log="$build/fuzz-$target.log"
status=0
started=$(date +%s)
# A hang is an input still running after 300 s of wall-clock time: libFuzzer times an input by the clock, so a
# shorter limit reports inputs that only waited for a busy CPU (a 0.6 s script was once stopped at 60 s while
# builds ran beside the fuzzer). Standard input is /dev/null: a script may name /dev/stdin, which must not
# wait for a terminal.
"$build/tests/fuzz/tgc_fuzz_$target" "$corpus" "$seeds" -dict="$dictionary" -max_total_time="$seconds" \
  -timeout=300 -rss_limit_mb=4096 -max_len=8192 -detect_leaks=0 -print_final_stats=1 -artifact_prefix="$findings/" "$@" \
  < /dev/null > "$log" 2>&1 || status=$?
elapsed=$(($(date +%s) - started))
executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
coverage=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -n 1 || true)
if [ "$status" -ne 0 ] && grep -q "libFuzzer: run interrupted" "$log"; then
  echo "fuzz.sh: $target: interrupted after ${executions:-?} executions in $elapsed s, nothing found"
  exit 130
fi
if [ "$status" -ne 0 ]; then
  tail -n 60 "$log"
  echo "fuzz.sh: $target: FOUND a problem after ${executions:-?} executions; the input is in $findings/ (log: $log)"
  exit 1
fi
echo "fuzz.sh: $target: ${executions:-0} executions in $elapsed s, ${coverage:-no coverage figure}, nothing found"
