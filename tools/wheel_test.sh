#!/usr/bin/env bash
# tools/wheel_test.sh WHEEL [REFERENCE_TGC]: checks a wheel made by tools/wheel.sh as a user would get it: a fresh
# venv of /usr/bin/python3 with only NumPy (linked in from Debian's python3-numpy: no package index is needed),
# `pip install WHEEL` into it, then, in a mount namespace (unshare --mount; needs root) where an empty folder or
# /dev/null hides LLVM, ANTLR's runtime, oneDNN with libgomp and libOpenCL, libedit, the C and C++ compilers and
# headers and CMake (NumPy keeps OpenBLAS and libgfortran, as in tools/bundle_test.sh):
#   1. every library the wheel's module and command load comes from the wheel, NumPy's or the base system (ldd);
#   2. `import tgc` trains examples/logreg.tg, and its loss is what REFERENCE_TGC (default build/tgc) prints;
#   3. the console script `tgc` runs examples/mlp.tg and prints what REFERENCE_TGC prints (numbers as numbers);
#   4. `python -m tgc --version` and `tgc compile --emit=lib` (with the wheel's AOT runtime) work;
#   5. the package is typed: tgc/py.typed and tgc/_tgc.pyi are installed, and tgc.__version__ is the wheel's.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 1 ] || [ ! -f "$1" ]; then
  echo "usage: tools/wheel_test.sh WHEEL [REFERENCE_TGC]" >&2
  exit 2
fi
wheel=$(realpath "$1")
reference=$(realpath "${2:-build/tgc}")
python=/usr/bin/python3
[ -x "$reference" ] || { echo "tools/wheel_test.sh: no $reference to compare with: run tools/setup.sh" >&2; exit 2; }
version=$(basename "$wheel" | cut -d- -f2)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/empty"
export XDG_CACHE_HOME=$work/cache
unset LD_LIBRARY_PATH PYTHONPATH

"$python" -m venv "$work/venv"
site=$("$work/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
ln -s "$("$python" -c 'import numpy, os; print(os.path.dirname(numpy.__file__))')" "$site/numpy"
"$work/venv/bin/python" -m pip install --quiet --no-index --no-deps "$wheel"
installed=$site/tgc

data=examples/data
mlp_args=(--in "X=$data/spiral_X.npy" --in "labels=$data/spiral_y.npy" --steps 300 --print-every 100 --device=cpu)
"$reference" run examples/mlp.tg "${mlp_args[@]}" >"$work/mlp.expected"
"$reference" run examples/logreg.tg --in "X=$data/logreg_X.npy" --in "y=$data/logreg_y.npy" --steps 200 \
  --device=cpu >"$work/logreg.expected"

lib=/usr/lib/x86_64-linux-gnu
hidden=(/usr/lib/llvm-* /usr/include /usr/local/cuda /usr/local/cuda-* /usr/lib/gcc /usr/lib/jvm "$lib"/libLLVM*
  "$lib"/libantlr4* "$lib"/libedit* "$lib"/libbsd* "$lib"/libmd.* "$lib"/libz3* "$lib"/libxml2* "$lib"/libdnnl*
  "$lib"/libgomp* "$lib"/libOpenCL* /usr/bin/cc /usr/bin/c++ /usr/bin/gcc* /usr/bin/g++* /usr/bin/clang*
  /usr/bin/cmake /usr/bin/antlr4 /usr/bin/java)
cat >"$work/checks.sh" <<EOF
set -euo pipefail
for path in ${hidden[*]}; do
  [ -e "\$path" ] || continue
  if [ -d "\$path" ]; then mount --bind "$work/empty" "\$path"; else mount --bind /dev/null "\$path"; fi
done
venv=$work/venv
status=0
for binary in "$installed"/_tgc.*.so "$installed/bin/tgc" "$installed/lib/libtgc.so"; do
  while read -r soname arrow path rest; do
    case "\$(realpath -m "\$path")" in
      "$(realpath "$installed")"/lib/*) ;;
      /lib/x86_64-linux-gnu/* | /usr/lib/x86_64-linux-gnu/* | /lib64/*)
        case "\$soname" in
          libc.so.* | libm.so.* | libmvec.so.* | libdl.so.* | librt.so.* | libpthread.so.* | libstdc++.so.* | \\
            libgcc_s.so.* | libz.so.* | libzstd.so.* | liblzma.so.* | libtinfo.so.* | ld-linux-x86-64.so.*) ;;
          *) echo "FAIL \$binary takes \$soname from the system: \$path"; status=1 ;;
        esac ;;
      *) echo "FAIL \$binary: \$soname \$arrow \$path \$rest"; status=1 ;;
    esac
  done < <(ldd "\$binary" | awk '\$2 == "=>"')
done
[ \$status -eq 0 ] && echo "ok   1. every library comes from the wheel or the base system"
"\$venv/bin/python" - <<'PY'
import numpy as np, tgc
program = tgc.compile("examples/logreg.tg", device="cpu")
X, y = np.load("examples/data/logreg_X.npy"), np.load("examples/data/logreg_y.npy")
for _ in range(200):
    out = program.step(X=X, y=y)
print("loss = %s" % out["loss"])
PY
"\$venv/bin/tgc" run examples/mlp.tg ${mlp_args[*]} >"$work/mlp.actual"
"\$venv/bin/python" -m tgc --version
"\$venv/bin/tgc" compile examples/logreg.tg --emit=lib -o "$work/aot/logreg" 2>/dev/null
[ -s "$work/aot/liblogreg.a" ] && echo "ok   4. tgc compile --emit=lib wrote a library"
exit \$status
EOF
if [ "$(id -u)" -eq 0 ] && unshare --mount true 2>/dev/null; then
  unshare --mount bash "$work/checks.sh" >"$work/checks.out" || { cat "$work/checks.out"; exit 1; }
else
  echo "tools/wheel_test.sh: no mount namespace here (not root): nothing is hidden" >&2
  sed -i '/mount --bind/d' "$work/checks.sh"
  bash "$work/checks.sh" >"$work/checks.out" || { cat "$work/checks.out"; exit 1; }
fi
cat "$work/checks.out" | grep '^ok' || true
"$python" - "$work" "$version" "$installed" <<'EOF'
import os, sys
sys.path.insert(0, os.path.join("tests", "e2e"))
import numcheck
work, version, installed = sys.argv[1:4]
out = open(os.path.join(work, "checks.out")).read()
expected = open(os.path.join(work, "logreg.expected")).read().strip()
got = [line for line in out.splitlines() if line.startswith("loss = ")]
assert got and numcheck.line_matches(expected, got[0], 1e-5, 1e-6), (expected, got)
print("ok   2. import tgc trains examples/logreg.tg: %s (tgc run: %s)" % (got[0], expected))
want = open(os.path.join(work, "mlp.expected")).read().splitlines()
have = open(os.path.join(work, "mlp.actual")).read().splitlines()
assert len(want) == len(have) and all(numcheck.line_matches(w, h, 1e-5, 1e-6) for w, h in zip(want, have)), (want, have)
print("ok   3. the console script tgc runs examples/mlp.tg as the build's tgc does")
assert ("tgc " + version) in out, out
print("ok   4. python -m tgc --version says tgc %s" % version)
for name in ("py.typed", "_tgc.pyi"):
    assert os.path.exists(os.path.join(installed, name)), name
print("ok   5. typed: tgc/py.typed and tgc/_tgc.pyi are installed")
EOF
echo "tools/wheel_test.sh: $(basename "$wheel") passed"
