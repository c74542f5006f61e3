# SPDX-License-Identifier: MIT
"""T threads, each R rounds of a zeroed numpy array of N int64 that is
read before it is written (`a += r`) and then dropped: run by
lab/validate (validation/programs.py) under /usr/bin/python3 with jemalloc
preloaded.  numpy takes a zeroed array from calloc(); jemalloc gives it
an extent it purged with MADV_DONTNEED when the last array was freed, and
knowing it is zero does not clear it, so `a += r` reads each page first
(a read fault maps the shared zero page) and writes it then (a
copy-on-write fault: wp_page_copy() flushes the CPUs the other thread
runs on).  numpy lets go of the GIL in the loop, so the threads overlap.

    python3 np-tables.py THREADS ROUNDS N"""

import sys
import threading

import numpy as np


def work(rounds: int, n: int) -> None:
    for r in range(rounds):
        a = np.zeros(n, dtype=np.int64)
        a += r
        del a


def main() -> None:
    t, rounds, n = (int(x) for x in sys.argv[1:4])
    threads = [threading.Thread(target=work, args=(rounds, n)) for _ in range(t)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()


if __name__ == '__main__':
    main()
