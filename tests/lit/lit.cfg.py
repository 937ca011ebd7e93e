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
config.substitutions.append(("%examples", os.path.join(config.tgc_source_dir, "examples")))
config.environment["PATH"] = os.pathsep.join([config.llvm_tools_dir, config.environment.get("PATH", "")])
# Module search must not depend on the machine's environment.
config.environment.pop("TGC_PATH", None)
