"""tgc's REPL on a real terminal (tmux): `tgc` alone starts it with a banner and a prompt; a `def` block spans
lines under a continuation prompt; the up arrow recalls the last input (libedit's history), and the history
file keeps the session's inputs for the next one.

Usage: repl_terminal.py --tgc build/tgc        (exit 77, "skipped", when tmux is not installed)
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tgc", required=True)
    args = parser.parse_args()
    if not shutil.which("tmux"):
        print("skipped: tmux is not installed (tools/setup.sh installs it)")
        return 77
    folder = tempfile.mkdtemp(prefix="tgc-repl-terminal-")
    history = os.path.join(folder, "history")
    server = ["tmux", "-L", "tgc-test-%d" % os.getpid(), "-f", "/dev/null"]
    command = "env TERM=xterm TGC_HISTORY=%s %s" % (history, os.path.abspath(args.tgc))

    def screen():
        return subprocess.run(server + ["capture-pane", "-p", "-t", "repl"], capture_output=True,
                              text=True).stdout

    def wait_for(text, count=1, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if screen().count(text) >= count:
                return True
            time.sleep(0.1)
        print("FAIL: waited %ds for %r (x%d); the screen:\n%s" % (timeout, text, count, screen()))
        return False

    def keys(*sequence):
        subprocess.run(server + ["send-keys", "-t", "repl"] + list(sequence), check=True)

    failures = 0
    try:
        subprocess.run(server + ["new-session", "-d", "-s", "repl", "-x", "120", "-y", "40", command], check=True)
        steps = [
            (None, "REPL: statements and expressions; :help lists the commands", 1),
            (None, "tg>", 1),  # the screen as tmux captures it: trailing blanks dropped
            (["let x = f32(arange(3))", "Enter"], "x = [0. 1. 2.]  # f32[3]", 1),
            (["def f(v) {", "Enter"], "...", 1),
            (["  return v * 2", "Enter", "}", "Enter"], "tg>", 3),
            (["f(x) + 1", "Enter"], "[1. 3. 5.]  # f32[3]", 1),
            (["Up"], "tg> f(x) + 1", 2),  # the last input, recalled onto the prompt
            (["Enter"], "[1. 3. 5.]  # f32[3]", 2),
        ]
        for sequence, expected, count in steps:
            if sequence:
                keys(*sequence)
            if not wait_for(expected, count):
                failures += 1
                break
        keys(":quit", "Enter")
        deadline = time.time() + 10
        while time.time() < deadline and subprocess.run(server + ["has-session", "-t", "repl"],
                                                         capture_output=True).returncode == 0:
            time.sleep(0.1)
        saved = open(history).read().replace("\\040", " ") if os.path.exists(history) else ""
        for line in ("let x = f32(arange(3))", "f(x) + 1", ":quit"):
            if line not in saved:
                print("FAIL: the history file lacks %r:\n%s" % (line, saved))
                failures += 1
    finally:
        subprocess.run(server + ["kill-server"], capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)
    print("repl_terminal: %s" % ("ok" if failures == 0 else "%d failures" % failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
