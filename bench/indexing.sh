#!/usr/bin/env bash
# bench/indexing.sh: installs the benchmark's peers (NumPy, PyTorch: Debian packages) where missing, builds tgc
# and its Python module, and runs bench/indexing.py. Root (or sudo) is needed only to install.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
for package in python3-numpy python3-torch; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if ((${#missing[@]})); then
  echo "bench/indexing.sh: installing ${missing[*]}"
  sudo_cmd=$([ "$(id -u)" = 0 ] || echo sudo)
  $sudo_cmd apt-get update -qq
  $sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
bash tools/setup.sh >/dev/null
PYTHONPATH=build/python exec /usr/bin/python3 bench/indexing.py "$@"
