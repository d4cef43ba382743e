#!/usr/bin/env python3
"""Loads a file into memory the ways seed programs load model weights:

  --read           read() the whole file into a buffer (a copy in memory)
  --mmap           mmap(MAP_SHARED) it and touch every page
  --mmap-seq       the same, after madvise(MADV_SEQUENTIAL)
  --mmap-willneed  the same, after madvise(MADV_WILLNEED)

Usage: python3 load.py --read|--mmap|--mmap-seq|--mmap-willneed FILE
For `tally compare` (see README.md, "Compare commands").
"""

import mmap
import os
import sys


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    how, path = sys.argv[1], sys.argv[2]
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if how == "--read":
            buf = bytearray(size)
            view = memoryview(buf)
            got = 0
            while got < size:
                n = f.readinto(view[got:])
                if not n:
                    break
                got += n
            print(f"read {got} bytes", file=sys.stderr)
            return
        m = mmap.mmap(f.fileno(), 0, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
        if how == "--mmap-seq":
            m.madvise(mmap.MADV_SEQUENTIAL)
        elif how == "--mmap-willneed":
            m.madvise(mmap.MADV_WILLNEED)
        elif how != "--mmap":
            sys.exit(__doc__)
        page = mmap.PAGESIZE
        total = 0
        for off in range(0, size, page):
            total += m[off]
        print(f"touched {size // page} pages", file=sys.stderr)


if __name__ == "__main__":
    main()
