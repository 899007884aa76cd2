"""Write MB megabytes of deterministic, text-like, compressible bytes to PATH.

usage: gen_input.py PATH MB
"""
import random
import sys

path, mb = sys.argv[1], int(sys.argv[2])
rng = random.Random(21)
words = [bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 12)))
         for _ in range(20000)]
with open(path, "wb") as f:
    total, target = 0, mb * 1000 * 1000
    while total < target:
        chunk = b" ".join(rng.choices(words, k=200000)) + b"\n"
        f.write(chunk)
        total += len(chunk)
