#!/usr/bin/env bash
# tools/bundle.sh [OUT_DIR]: a portable tgc, OUT_DIR/tgc-VERSION-linux-x86_64.tar.gz (default OUT_DIR: dist/),
# for x86-64 Linux with glibc 2.34 and GCC 12's libstdc++ (or later) and nothing else installed, such as a GPU
# machine lent for a measurement (bench/gpu.sh --bundle runs its check from one). It builds in build-bundle/
# with -DTGC_BUNDLE=ON (tools/Bundle.cmake: LLVM linked statically into lib/libtgc.so) and lays out:
#
#   bin/tgc                         the command
#   lib/                            libtgc.so, the unit tests' fake CUDA driver and cuBLAS, and every library
#                                   they need but glibc, libstdc++, libgcc, zlib, zstd, liblzma and libtinfo
#                                   (ANTLR's runtime, OpenBLAS and its libgfortran, libedit, ...): found through
#                                   the binaries' RPATH of $ORIGIN/../lib; and the CUDA toolkit's libdevice
#                                   (lib/libdevice.10.bc: set TGC_LIBDEVICE to it where /usr/local/cuda is absent)
#   bench/gpu                       the GPU benchmark (bench/gpu.cpp)
#   tests/tgc_unit_tests            the unit tests (run them from the bundle's root: they read tests/data)
#   tests/e2e/*.py, tests/data      the end-to-end suites and their data
#   examples/, stdlib/              the examples with their data, the standard library's sources (tgc embeds
#                                   the standard library, so `import nn` needs no file)
#
# Binaries are stripped. The tarball must stay under 48 MiB: it travels with the working tree (64 MiB in all).
# The CUDA driver (libcuda.so.1) and cuBLAS are not bundled: they belong to the machine. tools/bundle_test.sh
# checks a bundle where the build's packages are hidden. Build parallelism: $TGC_JOBS (default: all cores).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-dist}
build=build-bundle
limit=$((48 << 20))

source tools/packages.sh
source tools/ship.sh
install_missing "${TGC_PACKAGES[@]}" "${TGC_BUNDLE_PACKAGES[@]}"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTGC_BUNDLE=ON >/dev/null
cmake --build "$build" --parallel "${TGC_JOBS:-$(nproc)}" \
  --target tgc gpu tgc_unit_tests tgc_fake_cuda tgc_fake_cublas
version=$("$build/tgc" --version | awk '{print $2}')
name=tgc-$version-linux-x86_64

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
stage=$work/$name
cmake --install "$build" --prefix "$stage" --strip >/dev/null

# The libraries the binaries load, but those every Linux has (tools/ship.sh).
binaries=("$stage"/bin/* "$stage"/bench/* "$stage"/tests/tgc_unit_tests "$stage"/lib/*.so*)
ship_libraries tools/bundle.sh "$stage/lib" "${binaries[@]}"

# libdevice, for the PTX of math functions: a machine lent for a GPU check may have no CUDA toolkit.
libdevice=${TGC_LIBDEVICE:-/usr/local/cuda/nvvm/libdevice/libdevice.10.bc}
if [ -f "$libdevice" ]; then
  cp "$libdevice" "$stage/lib/libdevice.10.bc"
else
  echo "tools/bundle.sh: no $libdevice: the bundle cannot compile for a GPU where the machine has none" >&2
fi

mkdir -p "$stage/tests/e2e"
cp tests/e2e/*.py tests/e2e/README.md "$stage/tests/e2e/"
cp -r tests/data "$stage/tests/"
cp -r examples stdlib "$stage/"
rm -f "$stage"/stdlib/*.cmake "$stage"/stdlib/CMakeLists.txt
cat >"$stage/README" <<EOF
tgc $version for x86-64 Linux with glibc 2.34 or later, made by tools/bundle.sh from $(git describe --always --dirty).
  bin/tgc run examples/softmax.tg [--device=cpu|sim|cuda]
  (cd THIS_FOLDER && tests/tgc_unit_tests)
  python3 tests/e2e/numpy_compare.py --tgc bin/tgc --device sim
  bench/gpu                      (the CUDA driver, libcuda.so.1, and cuBLAS come from the machine)
Where /usr/local/cuda is absent: export TGC_LIBDEVICE=THIS_FOLDER/lib/libdevice.10.bc (bench/gpu.sh does).
EOF

mkdir -p "$out"
tarball=$out/$name.tar.gz
# Reproducible: sorted names, no owners, the commit's time on every file.
tar -C "$work" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$(git log -1 --format=%ct)" -cf - "$name" |
  gzip -9 -n >"$tarball"
size=$(stat -c %s "$tarball")
echo "$tarball: $(awk -v s="$size" 'BEGIN { printf "%.1f MiB", s / 1048576 }') ($(du -sh "$stage" | cut -f1) unpacked)"
if [ "$size" -gt "$limit" ]; then
  echo "tools/bundle.sh: the bundle is larger than 48 MiB" >&2
  exit 1
fi
