"""Runs a command (its output passed through) and prints whether its peak resident memory stayed below 300 MB."""
import resource
import subprocess
import sys

subprocess.run(sys.argv[1:], check=True)
peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print("peak below 300 MB:", peak_kb < 300 * 1024, flush=True)
