"""Prints, then exits with status 3 through sys.exit: weft record --python keeps both."""
import sys


def say(s):
    print(s)


say("hello from python")
sys.stdout.flush()
sys.exit(3)
