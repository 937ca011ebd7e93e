#!/usr/bin/env bash
# Installs the Debian packages tgc needs (only those missing), then configures and builds it in build/.
# Idempotent: a second run installs nothing and rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

source tools/packages.sh
install_missing "${TGC_PACKAGES[@]}"

build_type=${TGC_BUILD_TYPE:-Release}
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="$build_type" >/dev/null
cmake --build build
