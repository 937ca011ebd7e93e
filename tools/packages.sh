# Sourced by tools/setup.sh, tools/fuzz.sh, tools/bundle.sh and tools/wheel.sh: the Debian packages tgc builds and tests with
# (python3-torch: the reference the convolution tests compare with; dataset-fashion-mnist: the CNN example's
# data; Open MPI: distributed runs, and iproute2's ip: their test across network namespaces), and how to
# install those that are missing (as root, or with sudo).

TGC_PACKAGES=(cmake ninja-build g++ llvm-19-dev llvm-19-tools antlr4 default-jre-headless libantlr4-runtime-dev
  libopenblas-dev libdnnl-dev nlohmann-json3-dev libboost-graph-dev python3-numpy python3-dev pybind11-dev python3-pytest
  libgtest-dev libgmock-dev libedit-dev tmux python3-torch dataset-fashion-mnist libopenmpi-dev openmpi-bin
  iproute2)
# tools/bundle.sh also links LLVM statically, whose support library needs zstd's development files.
TGC_BUNDLE_PACKAGES=(libzstd-dev)
# tools/wheel.sh packs the wheel with `python3 -m wheel pack`; tools/wheel_test.sh installs it into a venv.
TGC_WHEEL_PACKAGES=(python3-wheel python3-venv python3-pip)

# install_missing PACKAGE...: installs the packages not installed yet, quietly; nothing when all are.
install_missing() {
  local missing=() p sudo_cmd=""
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  echo "installing ${missing[*]}"
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
}
