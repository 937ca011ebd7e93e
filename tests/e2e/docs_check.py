#!/usr/bin/env python3
"""Every code block in docs/*.md runs, and prints what the docs say it prints.

Blocks are fenced with a language, and may follow directives in HTML comments, which a rendered page hides
(`<!-- run: ARGS -->` on the line before the fence):
  tg        a script. After `<!-- run: ARGS -->` it must pass `tgc run SCRIPT ARGS`; after `<!-- error -->` it must
            fail with exit code 1 and a located message; otherwise it must compile (`tgc compile --emit=opt`).
            After `<!-- file: PATH -->` it must also be the text of that file of the repository.
  console   `$ COMMAND` lines run in the repository root with bash (tgc, and the python3 running this check, first
            on the PATH; mpirun allowed to run as root), each followed by the output it must print (standard
            output and error together).
  repl      `tg> ` and `... ` lines are typed into `tgc repl --device=cpu`; the other lines are its output. The
            REPL blocks of one page are one session: each block is checked after the ones before it.
  pycon     `>>> ` and `... ` lines (a bare `...` ends an indented block) are typed into Python with the tgc
            module (BUILD/python, BUILD being tgc's folder) on its path, in the repository root; the other lines
            are what it prints. The pycon blocks of one page are one session, as the REPL's are. Skipped, and
            said so, when the module was not built.
  c, cpp, cmake  code in those languages, checked against the repository, where a test builds and runs it:
            after `<!-- file: PATH -->` the block is that file's whole text, after `<!-- excerpt: PATH -->` its
            lines appear in that file, in a row.
  text      not code (synopses): not run.
Expected output is matched line by line: a line `...` stands for any number of lines, `...` within a line for
any text there (times, a library's version), and numbers compare as numbers (numcheck.py): integers exactly, floats within rtol 1e-5 and atol 1e-6,
a float32's last printed digit, unless the fence states other tolerances (```console rtol=1e-4``` for a
training run, whose thousands of steps carry the CPU's rounding further). Floats are never compared as text:
their last digits differ between CPUs. Commands that need libdevice (`--emit=ptx`, `:ptx`) are skipped, and
say so, where it is missing.

Usage: docs_check.py --tgc build/tgc [--docs docs] [-v]
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

from numcheck import line_matches

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIBDEVICE = os.environ.get("TGC_LIBDEVICE", "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc")


DEFAULT_TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}


DIRECTIVE = re.compile(r"^<!-- (run|error|file|excerpt)(?::\s*(.*?))? -->$")


def blocks(path):
    """(language, tolerance, directives, first line number, lines) of each fenced block; the fence may state
    tolerances after the language (```console rtol=1e-4 atol=1e-6```), and the lines just before it directives
    (`<!-- run: ARGS -->`), kept as a dict."""
    found, language, start, lines, directives = [], None, 0, [], {}
    for number, line in enumerate(open(path).read().splitlines(), 1):
        directive = DIRECTIVE.match(line) if language is None else None
        if directive:
            directives[directive.group(1)] = directive.group(2) or ""
            continue
        if line.startswith("```"):
            if language is None:
                words = line[3:].split()
                language, start, lines = (words[0] if words else ""), number + 1, []
                tolerance = dict(DEFAULT_TOLERANCE)
                for word in words[1:]:
                    key, _, value = word.partition("=")
                    if key not in tolerance:
                        raise SystemExit("%s:%d: unknown fence option %r" % (path, number, word))
                    tolerance[key] = float(value)
            else:
                found.append((language, tolerance, block_directives, start, lines))
                language = None
            block_directives, directives = directives, {}
        elif language is not None:
            lines.append(line)
        else:
            directives = {}
    return found


def matches(expected, actual, tolerance):
    """Whether `actual` lines fit `expected` ('...' for any lines, '...' within a line for any text, numbers
    within the tolerance)."""
    expected = [line if line.strip() == "..." else line.replace("...", "{{}}") for line in expected]

    def fit(e, a):
        if e == len(expected):
            return a == len(actual) or (a < len(actual) and all(not line.strip() for line in actual[a:]))
        if expected[e].strip() == "...":
            return any(fit(e + 1, b) for b in range(a, len(actual) + 1))
        return (a < len(actual) and line_matches(expected[e], actual[a], tolerance["rtol"], tolerance["atol"])
                and fit(e + 1, a + 1))

    return fit(0, 0)


def needs_libdevice(text):
    return ("--emit=ptx" in text or ":ptx" in text) and not os.path.exists(LIBDEVICE)


def check_source(lines, directives):
    """A block of C, C++ or CMake: the text of a file of the repository, or lines of one in a row."""
    text = "\n".join(lines) + "\n"
    if "file" in directives:
        path = os.path.join(ROOT, directives["file"])
        if not os.path.isfile(path) or open(path).read() != text:
            return "the block is not the text of %s" % directives["file"]
        return None
    if "excerpt" in directives:
        path = os.path.join(ROOT, directives["excerpt"])
        if not os.path.isfile(path) or text not in open(path).read():
            return "the block's lines are not lines of %s, in a row" % directives["excerpt"]
        return None
    return "a block of source needs <!-- file: PATH --> or <!-- excerpt: PATH -->: the file a test builds"


def run_tg(tgc, lines, directives, folder):
    text = "\n".join(lines) + "\n"
    if "file" in directives:
        path = os.path.join(ROOT, directives["file"])
        if not os.path.isfile(path) or open(path).read() != text:
            return "the block is not the text of %s" % directives["file"]
    script = os.path.join(folder, "block.tg")
    with open(script, "w") as f:
        f.write(text)
    if "run" in directives:
        command = [tgc, "run", script] + directives["run"].split()
        want = 0
    elif "error" in directives:
        command, want = [tgc, "run", script], 1
    else:
        command, want = [tgc, "compile", script, "--emit=opt"], 0
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    if result.returncode != want:
        return "%s exited %d (expected %d):\n%s" % (" ".join(command[1:2]), result.returncode, want, result.stderr)
    if want == 1 and not re.search(r"block\.tg:\d+:\d+: error: ", result.stderr):
        return "no located error message:\n" + result.stderr
    return None


def run_console(tgc, lines, tolerance):
    commands = []
    for line in lines:
        if line.startswith("$ "):
            commands.append((line[2:], []))
        elif commands:
            commands[-1][1].append(line)
    # tgc, and the python3 running this check (Debian's, with NumPy, for which the module is built), come first.
    folders = [os.path.dirname(os.path.abspath(tgc)), os.path.dirname(sys.executable), os.environ["PATH"]]
    # The Python module's warning about OpenBLAS's kernels depends on the machine, not on the page.
    environment = dict(os.environ, PATH=os.pathsep.join(folders), PYTHONWARNINGS="ignore:OpenBLAS:RuntimeWarning")
    # mpirun (docs/distributed.md) as CI runs it: as root, which Open MPI refuses unless told, on however few
    # cores, and in a container that may forbid shared memory's single-copy mechanism.
    environment.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                       OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_btl_vader_single_copy_mechanism="none")
    for command, expected in commands:
        if needs_libdevice(command):
            print("  skipped (no libdevice): %s" % command)
            continue
        result = subprocess.run(["bash", "-c", command + " 2>&1"], cwd=ROOT, capture_output=True, text=True,
                                env=environment)
        actual = result.stdout.splitlines()
        if not matches(expected, actual, tolerance):
            return "$ %s\nexpected:\n%s\ngot:\n%s" % (command, "\n".join(expected), result.stdout)
    return None


def run_repl(tgc, lines, session, tolerance):
    """Runs the page's session so far (`session`: the typed and expected lines of its earlier blocks)."""
    if needs_libdevice("\n".join(lines)):
        print("  skipped (no libdevice): a REPL block with :ptx")
        return None
    typed, expected = session
    for line in lines:
        if line.startswith("tg> ") or line.startswith("... "):
            typed.append(line[4:])
        else:
            expected.append(line)
    result = subprocess.run([tgc, "repl", "--device=cpu"], input="\n".join(typed) + "\n", cwd=ROOT,
                            capture_output=True, text=True)
    actual = (result.stdout + result.stderr).splitlines()
    if not matches(expected, actual, tolerance):
        return "typed:\n%s\nexpected:\n%s\ngot:\n%s" % ("\n".join(typed), "\n".join(expected),
                                                       result.stdout + result.stderr)
    return None


# Types what it reads into an interactive console, as at the `>>>` prompt, without printing prompts.
PYCON_DRIVER = """
import code, sys
console = code.InteractiveConsole({"__name__": "__main__"})
for line in sys.stdin.read().split("\\n"):
    console.push(line)
"""


def run_pycon(tgc, lines, session, tolerance):
    """Runs the page's Python session so far (`session`: the typed and expected lines of its earlier blocks)."""
    module = os.path.join(os.path.dirname(tgc), "python")
    if not os.path.isdir(os.path.join(module, "tgc")):
        print("  skipped (the Python module was not built): a pycon block")
        return None
    typed, expected = session
    for line in lines:
        if line.startswith(">>> ") or line.startswith("... ") or line == "...":
            typed.append(line[4:])
        else:
            expected.append(line)
    environment = dict(os.environ, PYTHONPATH=module)
    # The module's warning about OpenBLAS's kernels depends on the machine, not on the page.
    result = subprocess.run([sys.executable, "-u", "-W", "ignore:OpenBLAS:RuntimeWarning", "-c", PYCON_DRIVER],
                            input="\n".join(typed) + "\n\n",
                            cwd=ROOT, capture_output=True, text=True, env=environment)
    actual = (result.stdout + result.stderr).splitlines()
    if not matches(expected, actual, tolerance):
        return "typed:\n%s\nexpected:\n%s\ngot:\n%s" % ("\n".join(typed), "\n".join(expected),
                                                       result.stdout + result.stderr)
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tgc", required=True)
    parser.add_argument("--docs", default=os.path.join(ROOT, "docs"))
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    tgc = os.path.abspath(args.tgc)
    passed = failed = 0
    for name in sorted(os.listdir(args.docs)):
        if not name.endswith(".md"):
            continue
        path = os.path.join(args.docs, name)
        session, python_session = ([], []), ([], [])
        for language, tolerance, directives, line, lines in blocks(path):
            where = "%s:%d (%s)" % (os.path.relpath(path, ROOT), line, language or "no language")
            with tempfile.TemporaryDirectory() as folder:
                if language == "tg":
                    problem = run_tg(tgc, lines, directives, folder)
                elif language == "console":
                    problem = run_console(tgc, lines, tolerance)
                elif language == "repl":
                    problem = run_repl(tgc, lines, session, tolerance)
                elif language == "pycon":
                    problem = run_pycon(tgc, lines, python_session, tolerance)
                elif language in ("c", "cpp", "cmake"):
                    problem = check_source(lines, directives)
                elif language == "text":
                    continue
                else:
                    problem = "a code block needs a language: tg, console, repl, pycon, c, cpp, cmake or text"
            if problem:
                failed += 1
                print("FAIL %s\n  %s" % (where, problem.replace("\n", "\n  ")))
            else:
                passed += 1
                if args.verbose:
                    print("ok   %s" % where)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
