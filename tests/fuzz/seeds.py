#!/usr/bin/env python3
"""Writes the seed corpus of one fuzzer into a folder, from what the repository already has.

  frontend  every .tg of examples/, stdlib/ and tests/lit/, and every tg code block of docs/
  repl      the typed lines of the REPL sessions of docs/ and tests/lit/repl/, and every example script
  npy       every .npy of tests/data/, tests/lit/ and examples/data/

Usage: seeds.py TARGET FOLDER
"""
import glob
import hashlib
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def files(*patterns):
    for pattern in patterns:
        for path in sorted(glob.glob(os.path.join(ROOT, pattern), recursive=True)):
            with open(path, "rb") as f:
                yield f.read()


def doc_blocks(language):
    """The bodies of the ```LANGUAGE blocks of docs/*.md."""
    for text in files("docs/*.md"):
        for block in re.findall(r"^```%s[^\n]*\n(.*?)^```" % language, text.decode(), re.M | re.S):
            yield block.encode()


def repl_sessions():
    for block in doc_blocks("repl"):
        typed = [line[4:] for line in block.decode().splitlines() if line.startswith(("tg> ", "... "))]
        yield ("\n".join(typed) + "\n").encode()
    yield from files("tests/lit/repl/Inputs/*.txt", "examples/*.tg")


def main():
    target, folder = sys.argv[1], sys.argv[2]
    seeds = {
        "frontend": lambda: list(files("examples/*.tg", "stdlib/*.tg", "tests/lit/**/*.tg")) + list(doc_blocks("tg")),
        "repl": lambda: list(repl_sessions()),
        "npy": lambda: list(files("tests/data/**/*.npy", "tests/lit/**/*.npy", "examples/data/*.npy")),
    }[target]()
    os.makedirs(folder, exist_ok=True)
    for seed in seeds:
        with open(os.path.join(folder, hashlib.sha1(seed).hexdigest()), "wb") as f:
            f.write(seed)
    print("%d seeds for %s in %s" % (len(seeds), target, folder))


if __name__ == "__main__":
    main()
