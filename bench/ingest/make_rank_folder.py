#!/usr/bin/env python3
"""Writes a folder of N rank files made from one real Kineto trace, as the profiler of an
N-rank job would leave them (one file per rank), for the many-ranks benchmark
(bench/README.md, "A folder of many rank files").

Rank file k (k = 0 .. N-1) is the source with:
- `distributedInfo`: "rank" set to k and "world_size" to N (the block is added after
  "schemaVersion" when the source has none);
- host process and thread ids moved to ids of their own: every "pid" or "tid" number of
  at least 64 (an operating-system id; GPU rows use the device number as pid and the
  stream as tid, which stay) becomes the id + k * 1000003, as N processes on N hosts
  would have distinct ids;
- every "ts" unchanged: the ranks ran the same steps at the same time.
The layout of the events is kept, so each file imports through the same windows as its
source. Files are named rank-KKKKK.pt.trace.json[.gz], in rank order.

  make_rank_folder.py SOURCE.json[.gz] N OUT_DIR [--plain] [--level L]

The files are gzipped (level 6 by default, as `gzip` writes; --level 1 is faster) unless
--plain. The source is read once; one rank file is written at a time.
"""
import argparse
import gzip
import os
import re
import sys

PID_TID = re.compile(rb'"(pid|tid)": (\d+)')
DIST = re.compile(rb'"distributedInfo"\s*:\s*\{[^{}]*\}')
RANK = re.compile(rb'"rank"\s*:\s*-?\d+')
WORLD = re.compile(rb'"world_size"\s*:\s*-?\d+')
SCHEMA = re.compile(rb'"schemaVersion"\s*:\s*\d+\s*,')
OS_ID_MIN = 64
ID_STRIDE = 1000003


def read_source(path):
    with open(path, 'rb') as f:
        head = f.read(2)
    opener = gzip.open if head == b'\x1f\x8b' else open
    with opener(path, 'rb') as f:
        return f.read()


def with_rank(text, rank, world):
    """The source text as rank `rank` of `world` would have written it."""
    m = DIST.search(text)
    if m is not None:
        block = m.group(0)
        block = RANK.sub(b'"rank": %d' % rank, block, count=1) if RANK.search(block) else \
            block.replace(b'{', b'{"rank": %d, ' % rank, 1)
        block = WORLD.sub(b'"world_size": %d' % world, block, count=1) if WORLD.search(block) \
            else block.replace(b'{', b'{"world_size": %d, ' % world, 1)
        text = text[:m.start()] + block + text[m.end():]
    else:
        info = b'"distributedInfo": {"backend": "nccl", "rank": %d, "world_size": %d},' % (
            rank, world)
        s = SCHEMA.search(text)
        if s is not None:
            text = text[:s.end()] + b'\n  ' + info + text[s.end():]
        else:
            brace = text.index(b'{')
            text = text[:brace + 1] + info + text[brace + 1:]
    if rank == 0:
        return text
    shift = rank * ID_STRIDE

    def move(m):
        value = int(m.group(2))
        if value < OS_ID_MIN:
            return m.group(0)
        return b'"%s": %d' % (m.group(1), value + shift)

    return PID_TID.sub(move, text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('source')
    ap.add_argument('n', type=int)
    ap.add_argument('out_dir')
    ap.add_argument('--plain', action='store_true', help='write .json instead of .json.gz')
    ap.add_argument('--level', type=int, default=6, help='gzip level (default 6)')
    args = ap.parse_args()
    if args.n < 1:
        sys.exit('N must be at least 1')
    text = read_source(args.source)
    if b'"traceEvents"' not in text:
        sys.exit('%s: not a Chrome trace (no traceEvents)' % args.source)
    os.makedirs(args.out_dir, exist_ok=True)
    suffix = '.pt.trace.json' if args.plain else '.pt.trace.json.gz'
    for rank in range(args.n):
        out = os.path.join(args.out_dir, 'rank-%05d%s' % (rank, suffix))
        body = with_rank(text, rank, args.n)
        if args.plain:
            with open(out, 'wb') as f:
                f.write(body)
        else:
            with gzip.open(out, 'wb', compresslevel=args.level) as f:
                f.write(body)
    print('%d rank files of %s (%.1f MB of JSON each) in %s' % (
        args.n, os.path.basename(args.source), len(text) / 1e6, args.out_dir))


if __name__ == '__main__':
    main()
