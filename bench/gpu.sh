#!/usr/bin/env bash
# bench/gpu.sh: everything tgc checks and measures on a CUDA GPU, in one run.
#
#   bash bench/gpu.sh --bundle FILE.tar.gz   from a bundle (tools/bundle.sh), on a machine with nothing installed
#                                            and nothing built: no package manager, CMake or compiler runs
#   bash bench/gpu.sh                        from source: builds in build/ (tools/setup.sh installs what is missing)
#                                            and runs the whole test suite first
#
#   1. the probe: `tgc run examples/softmax.tg --device=cuda`; exits 1 with the driver's reason where no GPU answers;
#   2. the CUDA unit tests (the gtest filter $TGC_GPU_TESTS, default '*Cuda*:*Gpu*:*Ptx*': the driver layer on the
#      fake driver, the real GPU's test, the PTX tests) from the bundle; from source, the whole suite (ctest);
#   3. tests/e2e/numpy_compare.py and sim_matches_cpu.py with --device cuda: every example and the NumPy
#      comparison suite give the CPU's numbers on the GPU; device_trace.py: the simulated device's trace of
#      each is this GPU's (on a GPU of the sim's 132 multiprocessors: H100 SXM, H200);
#   4. bench/gpu: fused elementwise kernels, reductions, an embedding gather and its scatter-add in GB/s and % of
#      the card's peak, matmul in TFLOP/s through cuBLAS and through the generated kernel, first-run (compile +
#      module load) latency, each result against the CPU's;
#   5. the MLP example's training step time, cpu against cuda.
# A step that fails does not stop the others (the machine may be lent once); the exit status is 1 if any failed.
# The steps share a deadline, $TGC_GPU_CHECK_SECONDS after the probe (default 420): a step still running then is
# stopped and the steps left are reported as not run, so that a check from a bundle ends within 8 minutes.
# With $OUT naming a folder, the log (gpu.log), the kernel table (gpu-table.txt) and the unit tests' report
# (unit-tests.xml) are written there too.
#
# Libraries from the machine, found without help where they are installed as usual: the CUDA driver (libcuda.so.1 on
# the loader's path, else in /usr/lib64, /usr/local/nvidia/lib64, /usr/lib/wsl/lib: that folder is added to
# LD_LIBRARY_PATH) and cuBLAS (on the loader's path or in /usr/local/cuda/lib64, which tgc searches itself; else a
# Python wheel's, nvidia/*/lib/libcublas.so.N beside the python3 first on PATH: TGC_CUBLAS names it). The python3
# first on PATH runs the suites (NumPy 1.24 or 2.x); from source, /usr/bin/python3 (Debian's NumPy), as in ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

bundle=""
if [ "${1:-}" = "--bundle" ]; then
  if [ $# -ne 2 ] || [ ! -f "$2" ]; then
    echo "usage: bash bench/gpu.sh [--bundle FILE.tar.gz]" >&2
    exit 2
  fi
  bundle=$(realpath "$2")
elif [ $# -gt 0 ]; then
  echo "usage: bash bench/gpu.sh [--bundle FILE.tar.gz]" >&2
  exit 2
fi

out=""
if [ -n "${OUT:-}" ] && [ -d "$OUT" ]; then
  out=$(realpath "$OUT")
  exec > >(tee "$out/gpu.log") 2>&1
fi
started=$(date +%s)
failures=()
step() { echo "== $* ($(($(date +%s) - started)) s)"; }
# run NAME COMMAND...: runs a step's command until the deadline; a failure is noted and the check goes on.
run() {
  local name=$1 left=$((deadline - $(date +%s)))
  shift
  if [ "$left" -le 0 ]; then
    echo "bench/gpu.sh: NOT RUN (no time left): $name"
    failures+=("$name (not run)")
  elif ! timeout -k 10 "$left" "$@"; then
    echo "bench/gpu.sh: FAILED: $name"
    failures+=("$name")
  fi
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -n "$bundle" ]; then
  tar -C "$work" -xzf "$bundle"
  root=$(echo "$work"/tgc-*)
  tgc=$root/bin/tgc
  bench_gpu=$root/bench/gpu
  python=python3
  # The bundle's libdevice, unless one is named (a machine without the CUDA toolkit has none).
  export TGC_LIBDEVICE=${TGC_LIBDEVICE:-$root/lib/libdevice.10.bc}
  if ! version=$("$tgc" --version 2>&1); then
    echo "bench/gpu.sh: the bundle's tgc does not start here (it needs glibc 2.34 and GCC 12's libstdc++): $version"
    exit 1
  fi
  echo "$version, from $(basename "$bundle")"
else
  bash tools/setup.sh >/dev/null
  root=$repo
  tgc=$repo/build/tgc
  bench_gpu=$repo/build/bench/gpu
  python=/usr/bin/python3
fi
# Kernels are compiled afresh: the first-run latencies measure compilation, not a cache of an earlier run.
export XDG_CACHE_HOME=$work/cache

# The CUDA driver: tgc opens libcuda.so.1 by name; where the loader does not know the folder, add it.
ldconfig_list() { { ldconfig -p || /sbin/ldconfig -p; } 2>/dev/null || true; }
if [ -z "${TGC_CUDA_DRIVER:-}" ] && ! ldconfig_list | grep -q 'libcuda\.so\.1 '; then
  searched=${LD_LIBRARY_PATH:-}
  for folder in ${searched//:/ } /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/local/nvidia/lib64 \
    /usr/local/nvidia/lib /usr/lib/wsl/lib; do
    if [ -e "$folder/libcuda.so.1" ]; then
      export LD_LIBRARY_PATH=$folder${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
      echo "CUDA driver: $folder/libcuda.so.1"
      break
    fi
  done
fi
# cuBLAS: on the loader's path or in /usr/local/cuda/lib64 tgc finds it; else a Python wheel's.
if [ -z "${TGC_CUBLAS:-}" ] && ! ldconfig_list | grep -qE 'libcublas\.so\.1[123] ' &&
  ! ls /usr/local/cuda/lib64/libcublas.so.1[123] >/dev/null 2>&1; then
  cat >"$work/find_cublas.py" <<'EOF'
import glob, os, site, sys
folders = []
try:
    import nvidia.cublas
    folders += [os.path.join(path, "lib") for path in nvidia.cublas.__path__]
except Exception:
    pass
for path in site.getsitepackages() + [site.getusersitepackages()] + sys.path:
    folders += glob.glob(os.path.join(path, "nvidia", "*", "lib"))  # nvidia/cublas/lib (CUDA 12), nvidia/cu13/lib
found = {name for folder in folders for name in glob.glob(os.path.join(folder, "libcublas.so.1[0-9]"))}
print(max(found, key=lambda name: int(name.rsplit(".", 1)[1])) if found else "")
EOF
  wheel=$(python3 "$work/find_cublas.py" 2>/dev/null || true)
  if [ -n "$wheel" ]; then
    export TGC_CUBLAS=$wheel
    export LD_LIBRARY_PATH=$(dirname "$wheel")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} # its libcublasLt
  fi
fi
if [ -n "${TGC_CUBLAS:-}" ]; then
  echo "cuBLAS: $TGC_CUBLAS"
else
  echo "cuBLAS: what tgc finds by itself (on the loader's path or in /usr/local/cuda/lib64), if anything"
fi

step "probe"
deadline=$(($(date +%s) + ${TGC_GPU_CHECK_SECONDS:-420}))
if ! "$tgc" run "$root/examples/softmax.tg" --device=cuda -v >"$work/probe.out" 2>"$work/probe.err"; then
  echo "bench/gpu.sh: no GPU to measure: $(cat "$work/probe.err")"
  exit 1
fi
cat "$work/probe.err"

if [ -n "$bundle" ]; then
  step "CUDA unit tests (${TGC_GPU_TESTS:-*Cuda*:*Gpu*:*Ptx*})"
  run "unit tests" bash -c 'cd "$1" && tests/tgc_unit_tests --gtest_filter="$2" --gtest_brief=1 \
    ${3:+--gtest_output=xml:$3/unit-tests.xml}' _ "$root" "${TGC_GPU_TESTS:-*Cuda*:*Gpu*:*Ptx*}" "$out"
else
  step "test suite"
  run "test suite" bash -c 'cd build && ctest -j"$(nproc)" --output-on-failure'
fi

numpy=$("$python" -c 'import numpy; print(numpy.__version__)' 2>&1 | tail -1 || true)
step "end-to-end suites on cuda ($("$python" --version 2>&1), NumPy $numpy)"
run "numpy_compare.py --device cuda" "$python" "$root/tests/e2e/numpy_compare.py" --tgc "$tgc" --device cuda
run "sim_matches_cpu.py --device cuda" "$python" "$root/tests/e2e/sim_matches_cpu.py" --tgc "$tgc" --device cuda
# The simulated device does what this GPU does: the same primitives, line for line (exit 77: not comparable here,
# e.g. a GPU of another multiprocessor count).
run "device_trace.py (sim against this GPU)" bash -c '"$1" "$2" --tgc "$3"; status=$?; [ $status -eq 77 ] || exit $status' \
  _ "$python" "$root/tests/e2e/device_trace.py" "$tgc"

step "kernels"
# Peak memory bandwidth from nvidia-smi when it is there (double data rate: 2 transfers a clock).
if command -v nvidia-smi >/dev/null; then
  read -r clock width < <(nvidia-smi --query-gpu=clocks.max.memory,memory.bus_width --format=csv,noheader,nounits \
    2>/dev/null | head -1 | tr -d ',' || echo "0 0")
  if [[ "${clock:-0}" =~ ^[0-9]+$ && "${width:-0}" =~ ^[0-9]+$ && "$clock" -gt 0 ]]; then
    export TGC_GPU_PEAK_GBS=$((clock * 2 * width / 8 / 1000))
  fi
fi
: "${TGC_GPU_PEAK_GBS:=4800}" # an H200's HBM3e when nvidia-smi cannot say
echo "peak memory bandwidth: ${TGC_GPU_PEAK_GBS} GB/s"
# A cache of its own: the first-run column measures compilation, even of kernels the suites compiled already.
run "bench/gpu" env XDG_CACHE_HOME="$work/bench-cache" bash -c 'set -o pipefail; "$1" --repeat 20 | tee "$2"' _ \
  "$bench_gpu" "$work/table.txt"
[ -z "$out" ] || [ ! -f "$work/table.txt" ] || cp "$work/table.txt" "$out/gpu-table.txt"

step "mlp training step (2000 steps)"
for device in cpu cuda; do
  run "mlp on $device" bash -c 'set -o pipefail; start=$(date +%s%N)
    "$1" run "$2/examples/mlp.tg" --in X="$2/examples/data/spiral_X.npy" \
      --in labels="$2/examples/data/spiral_y.npy" --steps 2000 --device "$3" | tail -1 || exit
    echo "$3: $((($(date +%s%N) - start) / 2000 / 1000)) us a step (process included)"' _ "$tgc" "$root" "$device"
done

step "done"
if [ ${#failures[@]} -gt 0 ]; then
  echo "bench/gpu.sh: ${#failures[@]} step(s) failed: ${failures[*]}"
  exit 1
fi
echo "bench/gpu.sh: every step passed"
