#!/usr/bin/python3
"""The REPL's cost per statement as a session grows: a statement should cost the same at line 10 and at line
10,000, since each compiles only what it reads of the session.

  python3 bench/repl.py [--tgc build/tgc] [--lines 100,1000,10000] [--repeat 3]

For each session length N, pipes N lines `let vI = vI-1 * 1.0001 + 1.0` (each reading the one before) into
`tgc repl --device=cpu` and reports statements per second over the whole session, and the cost of a statement
between the previous length and this one (the difference of the two sessions' times over the difference of
their lengths: what a statement costs that deep into a session, start-up aside). Constant cost per statement
shows as that column staying flat. The best of --repeat runs each; the machine is shared, so compare the rows
of one run.
"""
import argparse
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def session(lines):
    text = ["let v0 = 1.0"]
    text += ["let v%d = v%d * 1.0001 + 1.0" % (i, i - 1) for i in range(1, lines)]
    return "\n".join(text) + "\n"


def seconds(tgc, text):
    start = time.perf_counter()
    result = subprocess.run([tgc, "repl", "--device=cpu"], input=text, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if result.returncode != 0 or result.stderr:
        sys.exit("tgc repl failed (%d):\n%s" % (result.returncode, result.stderr[-2000:]))
    return elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tgc", default=os.path.join(ROOT, "build", "tgc"))
    parser.add_argument("--lines", default="100,1000,10000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print("%8s %12s %14s %24s" % ("lines", "seconds", "statements/s", "ms/statement since last"))
    previous = (0, min(seconds(args.tgc, "") for _ in range(args.repeat)))  # start-up alone
    for lines in (int(n) for n in args.lines.split(",")):
        whole = min(seconds(args.tgc, session(lines)) for _ in range(args.repeat))
        marginal = (whole - previous[1]) / (lines - previous[0]) * 1e3
        print("%8d %12.3f %14.0f %24.3f" % (lines, whole, lines / whole, marginal))
        previous = (lines, whole)


if __name__ == "__main__":
    main()
