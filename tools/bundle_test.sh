#!/usr/bin/env bash
# tools/bundle_test.sh TARBALL [REFERENCE_TGC]: checks a bundle made by tools/bundle.sh as a machine without the
# build's packages would run it. It unpacks the bundle in a temporary folder, records what the normal build's tgc
# (REFERENCE_TGC, default build/tgc) prints for every example on --device=cpu and --device=sim, and then, in a
# mount namespace (unshare --mount; needs root) where an empty folder or /dev/null hides LLVM, ANTLR's runtime,
# OpenBLAS and libgfortran, oneDNN with libgomp and libOpenCL, libedit, the CUDA toolkit, the compilers, the
# linker and CMake:
#   1. every library the bundle's binaries load comes from the bundle's lib/ or from the base system (ldd), and
#      no symbol they need is newer than glibc 2.34's;
#   2. every example prints on cpu and on sim what the normal build prints, numbers compared as numbers
#      (tests/e2e/numcheck.py: relative 1e-5, absolute 1e-6);
#   3. the unit tests pass, run from the bundle's root;
#   4. tests/e2e/numpy_compare.py --device sim passes with the bundle's tgc. NumPy itself needs OpenBLAS and
#      libgfortran, so this step hides only the rest; tgc still takes the bundle's copies (step 1: RPATH).
# /usr/bin/python3 runs the tests (Debian's python3-numpy; $TGC_PYTHON overrides it), as in ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 1 ] || [ ! -f "$1" ]; then
  echo "usage: tools/bundle_test.sh TARBALL [REFERENCE_TGC]" >&2
  exit 2
fi
tarball=$(realpath "$1")
reference=$(realpath "${2:-build/tgc}")
python=${TGC_PYTHON:-/usr/bin/python3}
[ -x "$reference" ] || { echo "tools/bundle_test.sh: no $reference to compare with: run tools/setup.sh" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -C "$work" -xzf "$tarball"
root=$(echo "$work"/tgc-*)
mkdir "$work/empty"
export XDG_CACHE_HOME=$work/cache # no kernel compiled by the normal build is reused
unset TGC_LIBDEVICE # the toolkit's is hidden below, as on a machine without it: tgc finds the bundle's
unset LD_LIBRARY_PATH

# Runs every example the way tests/e2e/sim_matches_cpu.py does; `record` saves the output, `compare` checks it.
cat >"$work/examples.py" <<'EOF'
import glob, json, os, sys
mode, tgc, root, saved = sys.argv[1:5]
sys.path.insert(0, os.path.join(root, "tests", "e2e"))
import numcheck, sim_matches_cpu as examples
outputs = json.load(open(saved)) if mode == "compare" else {}
failed = 0
for path in sorted(glob.glob(os.path.join(root, "examples", "*.tg"))):
    name = os.path.basename(path)
    steps = examples.TRAINING_STEPS if examples.trains(path) else 0
    for device in ("cpu", "sim"):
        key = "%s --device=%s" % (name, device)
        args, result = examples.run(tgc, path, device, examples.INPUTS.get(name, []), steps)
        got = result.stdout.splitlines()
        if result.returncode != 0:
            print("FAIL %s: exit %d\n%s" % (key, result.returncode, result.stderr.strip()))
            failed += 1
        elif mode == "record":
            outputs[key] = got
        else:
            want = outputs[key]
            same = len(got) == len(want) and all(numcheck.line_matches(w, g, 1e-5, 1e-6) for w, g in zip(want, got))
            print("%s %s (%d lines)" % ("ok  " if same else "FAIL", key, len(got)))
            if not same:
                print("  expected:\n    " + "\n    ".join(want) + "\n  got:\n    " + "\n    ".join(got))
                failed += 1
if mode == "record":
    json.dump(outputs, open(saved, "w"))
sys.exit(1 if failed else 0)
EOF
"$python" "$work/examples.py" record "$reference" "$PWD" "$work/reference.json"

# What the namespace hides: the build's libraries (the NumPy step keeps OpenBLAS and libgfortran), and its tools,
# the package manager's and pip, which are replaced by a script that notes the call and fails.
lib=/usr/lib/x86_64-linux-gnu
hidden_for_numpy=("$lib"/openblas-pthread "$lib"/libopenblas* "$lib"/libblas* "$lib"/liblapack* "$lib"/libgfortran*
  "$lib"/libquadmath*)
hidden=(/usr/lib/llvm-* /usr/include /usr/local/cuda /usr/local/cuda-* /usr/lib/gcc /usr/lib/jvm "$lib"/libLLVM*
  "$lib"/libantlr4* "$lib"/libedit* "$lib"/libbsd* "$lib"/libmd.* "$lib"/libz3* "$lib"/libxml2* "$lib"/libgtest*
  "$lib"/libdnnl* "$lib"/libgomp* "$lib"/libOpenCL*)
tools=(/usr/bin/cc /usr/bin/c++ /usr/bin/cpp* /usr/bin/gcc* /usr/bin/g++* /usr/bin/clang* /usr/bin/x86_64-linux-gnu-*
  /usr/bin/ld /usr/bin/ld.bfd /usr/bin/ld.gold /usr/bin/as /usr/bin/make /usr/bin/cmake /usr/bin/ctest /usr/bin/ninja
  /usr/bin/antlr4 /usr/bin/java /usr/bin/llvm-config* /usr/bin/apt /usr/bin/apt-get /usr/bin/apt-cache /usr/bin/dpkg
  $(type -ap pip pip3 | sort -u || true))
cat >"$work/called.sh" <<EOF
#!/bin/sh
echo "\$0 \$*" >>"$work/called.log"
echo "tools/bundle_test.sh: \$0 was called" >&2
exit 1
EOF
chmod +x "$work/called.sh"
cat >"$work/hidden.sh" <<EOF
set -euo pipefail
hide() {
  for path in "\$@"; do
    [ -e "\$path" ] || continue
    if [ -d "\$path" ]; then mount --bind "$work/empty" "\$path"; else mount --bind /dev/null "\$path"; fi
  done
}
for path in ${tools[*]}; do
  [ -e "\$path" ] && mount --bind "$work/called.sh" "\$path"
done
EOF

echo "== 1. libraries, with the build's packages hidden"
cat >"$work/step1.sh" <<EOF
source "$work/hidden.sh"
hide ${hidden[*]} ${hidden_for_numpy[*]}
cd "$root"
status=0
for binary in bin/tgc bench/gpu tests/tgc_unit_tests; do
  while read -r soname arrow path rest; do
    case "\$(realpath -m "\$path")" in
      "$root"/lib/*) ;;
      /lib/x86_64-linux-gnu/* | /usr/lib/x86_64-linux-gnu/* | /lib64/*)
        case "\$soname" in
          libc.so.* | libm.so.* | libmvec.so.* | libdl.so.* | librt.so.* | libpthread.so.* | libstdc++.so.* | \
            libgcc_s.so.* | libz.so.* | libzstd.so.* | liblzma.so.* | libtinfo.so.* | ld-linux-x86-64.so.*) ;;
          *) echo "FAIL \$binary takes \$soname from the system: \$path"; status=1 ;;
        esac ;;
      *) echo "FAIL \$binary: \$soname \$arrow \$path \$rest"; status=1 ;;
    esac
  done < <(ldd "\$binary" | awk '\$2 == "=>"')
done
[ \$status -eq 0 ] && echo "ok   every library comes from the bundle or the base system"
exit \$status
EOF
unshare --mount bash "$work/step1.sh"
newest() { objdump -T "$root"/bin/* "$root"/bench/* "$root"/tests/tgc_unit_tests "$root"/lib/*.so* |
  grep -o "$1_[0-9.]*" | sort -uV | tail -1; }
echo "     the newest symbol versions it needs: $(newest GLIBC), $(newest GLIBCXX), $(newest CXXABI)"
# glibc 2.34 (Ubuntu 22.04 has 2.35) and GCC 12's libstdc++ are what the bundle promises (tools/bundle.sh).
if [ "$(printf '%s\n' "$(newest GLIBC)" GLIBC_2.34 | sort -V | tail -1)" != GLIBC_2.34 ]; then
  echo "FAIL the bundle needs $(newest GLIBC), newer than glibc 2.34 (tools/BundleGlibc.cpp)"
  exit 1
fi

echo "== 2. the examples on cpu and sim, against $reference"
cat >"$work/step2.sh" <<EOF
source "$work/hidden.sh"
hide ${hidden[*]} ${hidden_for_numpy[*]}
"$python" "$work/examples.py" compare "$root/bin/tgc" "$root" "$work/reference.json"
# PTX with math functions, from the bundle's own libdevice (the toolkit's is hidden).
"$root/bin/tgc" compile "$root/examples/mlp.tg" --device=cuda --emit=ptx -o "$work/mlp.ptx"
grep -q "^.visible .entry" "$work/mlp.ptx" && echo "ok   --emit=ptx with the bundle's libdevice"
EOF
unshare --mount bash "$work/step2.sh"

echo "== 3. the unit tests, from the bundle's root"
cat >"$work/step3.sh" <<EOF
source "$work/hidden.sh"
hide ${hidden[*]} ${hidden_for_numpy[*]}
cd "$root" && tests/tgc_unit_tests --gtest_brief=1
EOF
unshare --mount bash "$work/step3.sh"

echo "== 4. tests/e2e/numpy_compare.py --device sim (OpenBLAS and libgfortran visible for NumPy)"
cat >"$work/step4.sh" <<EOF
source "$work/hidden.sh"
hide ${hidden[*]}
"$python" "$root/tests/e2e/numpy_compare.py" --tgc "$root/bin/tgc" --device sim
EOF
unshare --mount bash "$work/step4.sh"
echo "== 5. bench/gpu.sh --bundle: no package manager, CMake or compiler called"
cat >"$work/step5.sh" <<EOF
source "$work/hidden.sh"
hide ${hidden[*]} ${hidden_for_numpy[*]}
bash "$PWD/bench/gpu.sh" --bundle "$tarball"
EOF
# Without a GPU it stops at the probe (exit 1) with the driver's reason; with one, it runs the whole check.
status=0
unshare --mount bash "$work/step5.sh" || status=$?
[ $status -le 1 ] || { echo "FAIL bench/gpu.sh --bundle exited $status"; exit 1; }

if [ -s "$work/called.log" ]; then
  echo "FAIL the bundle's checks called what a bare machine lacks:"
  cat "$work/called.log"
  exit 1
fi
echo "ok   no step called a package manager, pip, CMake, a compiler or a linker"
echo "tools/bundle_test.sh: $(basename "$tarball") passed"
