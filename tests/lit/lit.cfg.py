# lit configuration for tgc's golden tests: .tg files with `# RUN:` and `# CHECK:` lines.
import os
import lit.formats

config.name = "tgc"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".tg"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tgc_binary_dir, "tests", "lit")

config.substitutions.append(("%tgc", os.path.join(config.tgc_binary_dir, "tgc")))
config.substitutions.append(("%python", config.python))
# FileCheck for floats: numbers compared as numbers, within the tolerance the RUN line states (tests/e2e/numcheck.py).
config.substitutions.append(
    ("%numcheck", config.python + " " + os.path.join(config.tgc_source_dir, "tests", "e2e", "numcheck.py")))
# The fake CUDA driver the tests build (tests/fake_cuda): TGC_CUDA_DRIVER=%fake_cuda runs tgc's CUDA device on it.
config.substitutions.append(("%fake_cuda", config.fake_cuda))
config.substitutions.append(("%fake_cublas", config.fake_cublas))
config.substitutions.append(("%examples", os.path.join(config.tgc_source_dir, "examples")))
config.environment["PATH"] = os.pathsep.join([config.llvm_tools_dir, config.environment.get("PATH", "")])
# Module search must not depend on the machine's environment.
config.environment.pop("TGC_PATH", None)
# Nor the device: tests that want a CUDA driver name one.
for variable in ("TGC_CUDA_DRIVER", "TGC_CUBLAS"):
    config.environment.pop(variable, None)
# Compiled kernels are cached under the build tree, never in the user's ~/.cache (tests that look at the cache
# set their own XDG_CACHE_HOME).
config.environment["XDG_CACHE_HOME"] = os.path.join(config.test_exec_root, "xdg-cache")
# ptxas validates generated PTX where the CUDA toolkit is installed: tests that run it say `REQUIRES: ptxas`, and
# lit reports them as unsupported elsewhere.
ptxas = "/usr/local/cuda/bin/ptxas"
if os.path.exists(ptxas):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))
# PTX with math functions links libdevice, which comes with the CUDA toolkit (or $TGC_LIBDEVICE).
if os.path.exists(os.environ.get("TGC_LIBDEVICE", "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc")):
    config.available_features.add("libdevice")
if "TGC_LIBDEVICE" in os.environ:
    config.environment["TGC_LIBDEVICE"] = os.environ["TGC_LIBDEVICE"]
# A build with sanitizers (-DTGC_SANITIZE=...): memory measurements do not apply to it.
if config.sanitize:
    config.available_features.add("sanitizers")
# The CPU host kernels are compiled for (the suite also runs under each x86-64 level: tests/CMakeLists.txt).
if "TGC_HOST_CPU" in os.environ:
    config.environment["TGC_HOST_CPU"] = os.environ["TGC_HOST_CPU"]
