#!/usr/bin/env python3
"""Writes N time-shifted copies of a Kineto trace as one trace, for the scaling curve of
the Kineto import (bench/README.md, "Kineto import at scale").

Copy k (k = 0 .. N-1) is the source's traceEvents with every "ts" moved later by k times
the trace's span (the last end minus the first start, in us), so that the copies follow
each other in time as N steps of one longer run would. The header (deviceProperties,
distributedInfo, ...) and the trailer (traceName) are written once; the layout of the
events (one key group per line, as Kineto writes them) is kept, so the importer sees the
same windows as in the source.

  make_copies.py SOURCE.json[.gz] N OUT.json[.gz]

OUT ending in .gz is compressed with `gzip -1` as it is written (one gzip member), so that
neither the text nor the compressed file is held in memory here.
"""
import gzip
import re
import subprocess
import sys

TS = re.compile(rb'"ts": (\d+)')
TS_DUR = re.compile(rb'"ts": (\d+(?:\.\d+)?), "dur": (\d+(?:\.\d+)?)')


def split(text):
    """Header (up to and including the events array's opening line), events, trailer."""
    start = text.index(b'"traceEvents": [')
    start = text.index(b'\n', start) + 1
    end = text.rindex(b']')  # the events array closes at the last ']' of this layout
    end = text.rindex(b'\n', 0, end) + 1
    return text[:start], text[start:end].rstrip(b'\n'), text[end:]


def span_us(events):
    first = min(int(float(m.group(1))) for m in TS.finditer(events))
    last = max(float(m.group(1)) + float(m.group(2)) for m in TS_DUR.finditer(events))
    return int(last) - first + 1


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    source, copies, out_path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    opener = gzip.open if source.endswith('.gz') else open
    with opener(source, 'rb') as f:
        text = f.read()
    header, events, trailer = split(text)
    span = span_us(events)
    if out_path.endswith('.gz'):
        out_file = open(out_path, 'wb')
        proc = subprocess.Popen(['gzip', '-1', '-c'], stdin=subprocess.PIPE, stdout=out_file)
        out = proc.stdin
    else:
        proc = None
        out = open(out_path, 'wb')
    out.write(header)
    for k in range(copies):
        shift = k * span
        if k > 0:
            out.write(b',\n')
        if shift == 0:
            out.write(events)
        else:
            out.write(TS.sub(lambda m: b'"ts": %d' % (int(m.group(1)) + shift), events))
    out.write(b'\n')
    out.write(trailer)
    out.close()
    if proc is not None:
        if proc.wait() != 0:
            sys.exit('gzip failed')
        out_file.close()
    sys.stderr.write('%s: %d copies, span %d us\n' % (out_path, copies, span))
    # The number of JSON events written (every event has a "ph"), for per-event figures.
    print(copies * events.count(b'"ph":'))


if __name__ == '__main__':
    main()
