#!/usr/bin/env bash
# bench/rnn.sh: installs PyTorch (a Debian package) where missing, builds tgc and its Python module, and runs
# bench/rnn.py. Root (or sudo) is needed only to install.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/packages.sh
install_missing python3-numpy python3-torch
bash tools/setup.sh >/dev/null
PYTHONPATH=build/python exec /usr/bin/python3 bench/rnn.py "$@"
