#!/usr/bin/env bash
# Quick start: install what is missing, build, and run the main example.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
build/tgc run examples/softmax.tg
