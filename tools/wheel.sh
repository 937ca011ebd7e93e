#!/usr/bin/env bash
# tools/wheel.sh [OUT_DIR]: the Python wheel, OUT_DIR/tgc-VERSION-cp311-cp311-linux_x86_64.whl (default OUT_DIR:
# dist/), for Debian's python3 (3.11) with NumPy: `pip install` it into any venv of that Python where NumPy
# imports. It builds in build-wheel/ as the bundle does (-DTGC_BUNDLE=ON: LLVM linked statically into
# lib/libtgc.so; tools/Bundle.cmake) with the Python module, and packs with `python3 -m wheel pack`:
#
#   tgc/__init__.py, __main__.py     the package (python/tgc/), its typed API (py.typed, _tgc.pyi), and the
#   tgc/_tgc.cpython-311-*.so        extension, whose RPATH ($ORIGIN/lib) finds the libraries below
#   tgc/_built_for.py                the interpreter it is for, written here
#   tgc/bin/tgc                      the command, which the console script `tgc` (and python3 -m tgc) runs
#   tgc/lib/                         libtgc.so, the AOT runtime (libtgc_aot_runtime.a, for tgc compile
#                                    --emit=lib), and every library those load but the base system's (ANTLR's
#                                    runtime, OpenBLAS, oneDNN, libgomp, libedit, ...)
#   tgc/stdlib/*.tg                  the standard library's sources (tgc embeds them; these are to read)
#   tgc-VERSION.dist-info/           METADATA (Requires-Dist: numpy), WHEEL, entry_points.txt (console script)
#
# tools/wheel_test.sh checks a wheel in a venv where the build's packages are hidden. Build parallelism:
# $TGC_JOBS (default: all cores).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-dist}
build=build-wheel

source tools/packages.sh
source tools/ship.sh
install_missing "${TGC_PACKAGES[@]}" "${TGC_BUNDLE_PACKAGES[@]}" "${TGC_WHEEL_PACKAGES[@]}"
python=/usr/bin/python3
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTGC_BUNDLE=ON -DTGC_PYTHON=ON >/dev/null
cmake --build "$build" --parallel "${TGC_JOBS:-$(nproc)}" --target tgc tgc_python tgc_aot_runtime
version=$("$build/tgc" --version | awk '{print $2}')
pyversion=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
tag=cp${pyversion/./}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
stage=$work/tgc-$version
package=$stage/tgc
mkdir -p "$package/bin" "$package/lib" "$package/stdlib"
cp python/tgc/__init__.py python/tgc/__main__.py python/tgc/_tgc.pyi python/tgc/py.typed "$package/"
cp "$build/lib/libtgc_aot_runtime.a" "$package/lib/"
cp stdlib/*.tg "$package/stdlib/"
cat >"$package/_built_for.py" <<EOF
# Made by tools/wheel.sh: the interpreter the extension _tgc was built for.
EXECUTABLE = "python$pyversion"
VERSION = "$pyversion"
LAUNCHER = ""
COMMAND = ""  # the wheel's tgc/bin/tgc (tgc/__main__.py finds it)
EOF
# The module, the command and libtgc.so as installed (tools/Bundle.cmake): stripped, with the RPATHs the wheel's
# layout wants ($ORIGIN/lib, $ORIGIN/../lib, $ORIGIN).
cmake --install "$build" --component wheel --prefix "$work/installed" --strip >/dev/null
cp "$work/installed/bin/tgc" "$package/bin/tgc"
cp "$work/installed/lib/libtgc.so" "$package/lib/"
module=$(basename "$build"/python/tgc/_tgc.*.so)
cp "$work/installed/python/tgc/$module" "$package/$module"
strip --strip-unneeded "$package/$module"

# The libraries they load, but those every Linux has (tools/ship.sh).
ship_libraries tools/wheel.sh "$package/lib" "$package/bin/tgc" "$package/$module" "$package/lib/libtgc.so"

info=$stage/tgc-$version.dist-info
mkdir -p "$info"
cat >"$info/METADATA" <<EOF
Metadata-Version: 2.1
Name: tgc
Version: $version
Summary: tgc: a compiler for a small array-expression language (.tg scripts), from Python
License: see the project's repository
Requires-Python: ==$pyversion.*
Requires-Dist: numpy

Compile .tg scripts, run them on NumPy arrays, train their params (docs/python.md); the tgc command comes
with it (tgc run, tgc compile, tgc repl).
EOF
cat >"$info/WHEEL" <<EOF
Wheel-Version: 1.0
Generator: tgc tools/wheel.sh
Root-Is-Purelib: false
Tag: $tag-$tag-linux_x86_64
EOF
cat >"$info/entry_points.txt" <<EOF
[console_scripts]
tgc = tgc.__main__:main
EOF
mkdir -p "$out"
"$python" -m wheel pack "$stage" -d "$out" >/dev/null
wheel=$out/tgc-$version-$tag-$tag-linux_x86_64.whl
[ -f "$wheel" ] || { echo "tools/wheel.sh: no $wheel was made" >&2; exit 1; }
echo "$wheel ($(du -h "$wheel" | cut -f1))"
