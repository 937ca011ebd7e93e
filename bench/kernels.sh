#!/usr/bin/env bash
# bench/kernels.sh: installs the benchmark's peers (NumPy, numexpr, PyTorch: Debian packages) where missing,
# builds tgc, and runs bench/kernels.py. Root (or sudo) is needed only to install.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/packages.sh
install_missing python3-numpy python3-numexpr python3-torch
bash tools/setup.sh >/dev/null
exec /usr/bin/python3 bench/kernels.py --tgc-bench build/bench/kernels "$@"
