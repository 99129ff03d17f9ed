#!/usr/bin/env python3
"""The cost of a folder of many rank files: `teller inspect DIR` and `teller diagnose DIR`
on folders of N = 8, 16, 32, 64 rank files made from one real trace
(bench/ingest/make_rank_folder.py), each run a fresh process under /usr/bin/time -v.
Prints, per N, command and build, the medians over the runs of the wall time, the CPU time
(user + system) and the peak RSS, and the rows imported (JSON events are N times the
source's).

  rank_folder_scaling.py TELLER SOURCE [--ref REF_TELLER] [--ranks 8,16,32,64] [--runs R]
                         [--dir DIR] [--keep] [--same]

TELLER (and REF_TELLER, another build measured in turn in the same sitting): the `teller`
binary. SOURCE: a Kineto .json[.gz] (hta/df_index_resolver in bench/README.md). The folders
are written to DIR/ranks-N (default $TMPDIR or /tmp) unless they are there already, and
deleted at the end unless --keep. --same also checks, once per N, that both builds write
the same `diagnose --json` report, byte for byte.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

RSS = re.compile(r'Maximum resident set size \(kbytes\): (\d+)')
WALL = re.compile(r'Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([0-9.]+)')
USER = re.compile(r'User time \(seconds\): ([0-9.]+)')
SYS = re.compile(r'System time \(seconds\): ([0-9.]+)')
ROWS = re.compile(r'"events": ?(\d+)')


def timed(argv):
    """Runs argv under /usr/bin/time -v: (wall s, cpu s, peak RSS MiB, stdout)."""
    p = subprocess.run(['/usr/bin/time', '-v'] + argv, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit('%s failed (exit %d):\n%s' % (' '.join(argv), p.returncode, p.stderr[-2000:]))
    err = p.stderr
    w = WALL.search(err)
    wall = (int(w.group(1) or 0) * 3600 + int(w.group(2)) * 60 + float(w.group(3)))
    cpu = float(USER.search(err).group(1)) + float(SYS.search(err).group(1))
    rss = int(RSS.search(err).group(1)) / 1024.0
    return wall, cpu, rss, p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('teller')
    ap.add_argument('source')
    ap.add_argument('--ref')
    ap.add_argument('--ranks', default='8,16,32,64')
    ap.add_argument('--runs', type=int, default=3)
    ap.add_argument('--dir', default=os.environ.get('TMPDIR', '/tmp'))
    ap.add_argument('--keep', action='store_true')
    ap.add_argument('--same', action='store_true')
    args = ap.parse_args()
    make = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'make_rank_folder.py')
    builds = [('new', args.teller)] + ([('ref', args.ref)] if args.ref else [])
    print('ranks | rows | command | build | wall s | cpu s | peak RSS MiB | RSS per rank MiB')
    print('---|---|---|---|---|---|---|---')
    made = []
    for n in [int(x) for x in args.ranks.split(',')]:
        folder = os.path.join(args.dir, 'ranks-%d' % n)
        if not os.path.isdir(folder):
            subprocess.run([sys.executable, make, args.source, str(n), folder], check=True,
                           stdout=subprocess.DEVNULL)
            made.append(folder)
        out = tempfile.mkdtemp()
        try:
            _, _, _, text = timed([args.teller, 'inspect', folder, '--json'])
            m = ROWS.search(text)
            rows = int(m.group(1)) if m else 0
            for command in ('inspect', 'diagnose'):
                samples = {name: [] for name, _ in builds}
                for _ in range(args.runs):
                    for name, binary in builds:  # in turn, so that both see the same load
                        argv = [binary, command, folder]
                        if command == 'diagnose':
                            argv += ['--json', os.path.join(out, name + '.json')]
                        samples[name].append(timed(argv)[:3])
                for name, _ in builds:
                    wall = statistics.median(s[0] for s in samples[name])
                    cpu = statistics.median(s[1] for s in samples[name])
                    rss = statistics.median(s[2] for s in samples[name])
                    print('%d | %d | %s | %s | %.2f | %.2f | %.0f | %.1f' %
                          (n, rows, command, name, wall, cpu, rss, rss / n))
                    sys.stdout.flush()
            if args.same and args.ref:
                with open(os.path.join(out, 'new.json'), 'rb') as a, \
                        open(os.path.join(out, 'ref.json'), 'rb') as b:
                    print('%d ranks: diagnose --json %s' %
                          (n, 'same' if a.read() == b.read() else 'DIFFERENT'))
        finally:
            shutil.rmtree(out)
    if not args.keep:
        for folder in made:
            shutil.rmtree(folder)


if __name__ == '__main__':
    main()
