#!/usr/bin/env bash
# bench/data_parallel.sh: installs what is missing (Open MPI, NumPy), builds tgc and its Python module, and runs
# bench/data_parallel.py. Root (or sudo) is needed only to install; mpirun runs as root where the user is root.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/packages.sh
install_missing python3-numpy openmpi-bin libopenmpi-dev
bash tools/setup.sh >/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
PYTHONPATH=build/python exec /usr/bin/python3 bench/data_parallel.py "$@"
