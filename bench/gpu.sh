#!/usr/bin/env bash
# bench/gpu.sh: everything tgc measures on a CUDA GPU, in one run on a machine with the NVIDIA driver:
#   1. builds (tools/setup.sh installs what is missing);
#   2. runs the test suite, then the end-to-end checks again with --device=cuda (every example and the NumPy
#      comparison suite must give the CPU's numbers);
#   3. build/bench/gpu: fused elementwise kernels and reductions in GB/s against the card's peak, matmul in
#      TFLOP/s (cuBLAS), first-run (compile + module load) latency, each result against the CPU's;
#   4. the MLP example's training step time, cpu against cuda.
# Exits early, with the reason, where no GPU answers.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh >/dev/null
if ! ./build/tgc run examples/softmax.tg --device=cuda >/dev/null 2>/tmp/tgc_gpu_probe; then
  echo "bench/gpu.sh: no GPU to measure: $(cat /tmp/tgc_gpu_probe)"
  exit 1
fi
echo "== tests"
(cd build && ctest -j"$(nproc)" --output-on-failure)
/usr/bin/python3 tests/e2e/numpy_compare.py --tgc build/tgc --device cuda
/usr/bin/python3 tests/e2e/sim_matches_cpu.py --tgc build/tgc --device cuda
echo "== kernels"
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
./build/bench/gpu --repeat 20
echo "== mlp training step (2000 steps)"
for device in cpu cuda; do
  start=$(date +%s.%N)
  ./build/tgc run examples/mlp.tg --in X=examples/data/spiral_X.npy --in labels=examples/data/spiral_y.npy \
    --steps 2000 --device "$device" | tail -1
  end=$(date +%s.%N)
  echo "$device: $(echo "($end - $start) / 2000 * 1000000" | bc -l | cut -c1-8) us a step (process included)"
done
