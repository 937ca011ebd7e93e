"""The tgc command, run from the package: `python3 -m tgc ARGS`, and the `tgc` command a wheel installs, run
the tgc executable that came with the module (the wheel's tgc/bin/tgc, or the build's) with ARGS."""
import os
import sys

from . import _built_for


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    command = os.path.join(here, "bin", "tgc")
    if not os.path.exists(command):
        command = _built_for.COMMAND
    try:
        os.execv(command, ["tgc"] + sys.argv[1:])
    except OSError as error:
        sys.exit("tgc: cannot run %s: %s" % (command, error.strerror))


if __name__ == "__main__":
    main()
