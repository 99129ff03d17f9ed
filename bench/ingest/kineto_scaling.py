#!/usr/bin/env python3
"""The scaling curve of the Kineto import: N = 1, 2, 4, ... time-shifted copies of one
trace (bench/ingest/make_copies.py) imported by two builds of kineto_import_benchmark
(--import-only), in turn, each run a fresh process so that its peak RSS is that of one
import. Prints per N and build the medians over the runs: import seconds (wall, and CPU:
user + system of all threads), microseconds per JSON event, peak RSS above start, and the bytes per JSON event beyond the event
columns the import filled (the floor of any importer; printed as well).

  kineto_scaling.py NEW_BENCH REF_BENCH SOURCE [--max N] [--runs R] [--gzip] [--dir DIR]

SOURCE: a Kineto .json or .json.gz (hta/df_index_resolver in bench/README.md). --gzip
writes the copies as .json.gz (gzip -1, one member) instead of plain .json. Each file is
written to DIR (default $TMPDIR or /tmp), measured, and deleted before the next one.
Runs above 32 copies are fewer (R // 2, at least 1): they take tens of seconds each.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

LINE = re.compile(r'import-only: rows (\d+), runs \d+, ImportKineto median ([0-9.]+) s .*'
                  r'cpu median ([0-9.]+) s, '
                  r'peak RSS above start ([0-9.]+) MB, event columns ([0-9.]+) MB')


def measure(bench, path):
    out = subprocess.run([bench, '--import-only', '--runs', '1', path], check=True,
                         capture_output=True, text=True).stdout
    m = LINE.search(out)
    if m is None:
        sys.exit('unexpected output of %s:\n%s' % (bench, out))
    return (int(m.group(1)), float(m.group(2)), float(m.group(4)), float(m.group(5)),
            float(m.group(3)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('new')
    ap.add_argument('ref')
    ap.add_argument('source')
    ap.add_argument('--max', type=int, default=128)
    ap.add_argument('--runs', type=int, default=3)
    ap.add_argument('--gzip', action='store_true')
    ap.add_argument('--dir', default=os.environ.get('TMPDIR', '/tmp'))
    args = ap.parse_args()
    make = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'make_copies.py')
    print('copies | JSON events | text MB | build | import s | us/event | cpu s | cpu us/event '
          '| peak above start MiB | B/event beyond columns | columns B/event')
    n = 1
    while n <= args.max:
        path = os.path.join(args.dir, 'kineto_scaling_x%d.json%s' % (n, '.gz' if args.gzip else ''))
        events = int(subprocess.run([sys.executable, make, args.source, str(n), path], check=True,
                                    capture_output=True, text=True).stdout)
        text_mb = None
        try:
            runs = args.runs if n <= 32 else max(1, args.runs // 2)
            results = {'new': [], 'ref': []}
            for _ in range(runs):
                for build in ('ref', 'new'):
                    results[build].append(measure(getattr(args, build), path))
            if not args.gzip:
                text_mb = os.path.getsize(path) / 1e6
        finally:
            os.remove(path)
        for build in ('ref', 'new'):
            rows = results[build][0][0]
            secs = statistics.median(r[1] for r in results[build])
            peak = statistics.median(r[2] for r in results[build])
            cpu = statistics.median(r[4] for r in results[build])
            columns = results[build][0][3]
            beyond = (peak - columns) * (1 << 20) / events
            print('%d | %d | %s | %s | %.3f | %.3f | %.3f | %.3f | %.1f | %.0f | %.0f' %
                  (n, events, '%.0f' % text_mb if text_mb else '-', build, secs,
                   secs / events * 1e6, cpu, cpu / events * 1e6, peak, beyond,
                   columns * (1 << 20) / events))
            sys.stdout.flush()
            assert rows == results['ref'][0][0], 'the builds disagree on the rows'
        n *= 2


if __name__ == '__main__':
    main()
