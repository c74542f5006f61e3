# SPDX-License-Identifier: MIT
"""A multithreaded CPython allocation loop, for lab/validate/run.sh.

THREADS threads each repeat ROUNDS times: build a list of 200000 small
objects (ints and short strings: pymalloc arenas, 1 MiB each, mmap'd and
munmap'd as they fill and empty), a list of 64 bytearrays of 64 KiB to
1 MiB (glibc malloc: mmap above its threshold, else the thread's arena
heap, grown by mprotect and trimmed by madvise), then drop them all.
The GIL lets one thread run Python code at a time; the allocator calls
are made by whichever thread holds it.

    python3 pyalloc.py [THREADS] [ROUNDS]      (default 4 30)
"""
import random
import sys
import threading
import time


def work(seed: int, rounds: int, out: list[int], idx: int) -> None:
    rng = random.Random(seed)
    total = 0
    for _ in range(rounds):
        objs = [i if i & 1 else str(i) for i in range(200000)]
        bufs = [bytearray(rng.randrange(64, 1025) * 1024) for _ in range(64)]
        total += len(objs) + sum(len(b) for b in bufs)
        del objs, bufs
    out[idx] = total


def main() -> None:
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    out = [0] * threads
    t0 = time.monotonic()
    ts = [threading.Thread(target=work, args=(i + 1, rounds, out, i))
          for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    print('threads=%d rounds=%d seconds=%.3f checksum=%d'
          % (threads, rounds, time.monotonic() - t0, sum(out)))


main()
