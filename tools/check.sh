#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite (unit, golden and end-to-end tests).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
cd build
ctest --output-on-failure -j"$(nproc)"
