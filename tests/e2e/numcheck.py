#!/usr/bin/env python3
"""Compares printed output with expected text, numbers as numbers: FileCheck for lines that hold floats.

The last digits of a float result differ between CPUs (vector width, FMA contraction, the vector math library's
variants, the BLAS's kernels), so a test must never compare them as text. A line matches an expected line when
both split into the same tokens (names, punctuation, numbers; whitespace only separates them, since NumPy pads
columns to the widest number) and each pair of numbers agrees:
  integers (no '.' and no exponent)   exactly: shapes, counts, indices and integer results do not vary;
  floats                              |got - expected| <= atol + rtol * |expected| (the tolerances the caller
                                      states: on the RUN line of a lit test, in the fence of a docs block).
An expected line holding `{{...}}` is matched as FileCheck would, as a pattern: `{{NAME}}` is any text.

As a lit tool:  numcheck.py CHECKFILE --rtol R --atol A [--prefix NUM] < OUTPUT
reads the lines `# NUM: TEXT` and `# NUM-NEXT: TEXT` of CHECKFILE, in order: a NUM line must match some later
line of OUTPUT, a NUM-NEXT line the very next one. It prints what did not match and exits 1.
"""

import argparse
import re
import sys

TOKEN = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|\S)")
FLOAT = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+[eE][-+]?\d+)(?:[eE][-+]?\d+)?$")
INTEGER = re.compile(r"[-+]?\d+$")


def tokens(line):
    return TOKEN.findall(line)


def pattern(line):
    """A pattern for an expected line with {{...}} wildcards."""
    parts = re.split(r"\{\{[^}]*\}\}", line)
    return re.compile("^" + ".*".join(re.escape(part) for part in parts) + "$")


def line_matches(expected, actual, rtol, atol):
    """Whether `actual` prints what `expected` says, floats within the tolerance."""
    if "{{" in expected:
        return bool(pattern(expected).match(actual.rstrip()))
    want, got = tokens(expected), tokens(actual)
    if len(want) != len(got):
        return False
    for w, g in zip(want, got):
        if FLOAT.match(w) and (FLOAT.match(g) or INTEGER.match(g)):
            if abs(float(g) - float(w)) > atol + rtol * abs(float(w)):
                return False
        elif w != g:
            return False
    return True


def text_matches(expected, actual, rtol=1e-5, atol=1e-6):
    """Whether two printouts say the same, line for line (line_matches), trailing blank lines aside."""
    want, got = expected.rstrip().splitlines(), actual.rstrip().splitlines()
    return len(want) == len(got) and all(line_matches(w, g, rtol, atol) for w, g in zip(want, got))


def check(checks, output, rtol, atol):
    """Matches (kind, text) checks in order against output lines; returns the problems found."""
    position = 0
    for number, (kind, text) in enumerate(checks, 1):
        if kind == "NEXT":
            if position < len(output) and line_matches(text, output[position], rtol, atol):
                position += 1
                continue
            found = output[position] if position < len(output) else "(end of output)"
            return ["check %d: the next line is not %r\n  found: %r" % (number, text, found)]
        for index in range(position, len(output)):
            if line_matches(text, output[index], rtol, atol):
                position = index + 1
                break
        else:
            return ["check %d: no line %r after line %d" % (number, text, position)]
    return []


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkfile")
    parser.add_argument("--prefix", default="NUM")
    parser.add_argument("--rtol", type=float, required=True)
    parser.add_argument("--atol", type=float, required=True)
    args = parser.parse_args()
    line = re.compile(r"^\s*#\s*%s(-NEXT)?:\s?(.*)$" % re.escape(args.prefix))
    checks = []
    for text in open(args.checkfile).read().splitlines():
        found = line.match(text)
        if found:
            checks.append(("NEXT" if found.group(1) else "ANY", found.group(2)))
    if not checks:
        print("numcheck: no '%s:' lines in %s" % (args.prefix, args.checkfile))
        return 1
    output = sys.stdin.read().splitlines()
    problems = check(checks, output, args.rtol, args.atol)
    for problem in problems:
        print("numcheck: " + problem)
    if problems:
        print("numcheck: output was:\n  " + "\n  ".join(output))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
