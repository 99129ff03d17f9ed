#!/usr/bin/env python3
"""Distinct step sequences per 100 engine steps of each kind, per setting of a dataset
from `teller dataset build` (docs/dataset-format.md).

Usage: bench/sim/step_variety.py DATASET_DIR

A step's sequence is the names of its GPU-work nodes (type 6 = kernel/copy, see the
dataset format) of rank 0 in order; one record per engine step (`seq`) is used (batch
siblings share it). The kind comes from the step range's `kind=`.
"""
import json, os, re, sys

GPU = 6


def main():
    root = sys.argv[1]
    total = {}
    for setting in sorted(os.listdir(root)):
        path = os.path.join(root, setting, "steps.jsonl")
        if not os.path.isfile(path):
            continue
        names = json.load(open(os.path.join(root, setting, "names.json")))["names"]
        seen, by_kind = set(), {}
        for line in open(path):
            d = json.loads(line)
            if d["seq"] in seen:
                continue
            seen.add(d["seq"])
            m = re.search(r"kind=(\w+)", names[d["name"][0]])
            kind = m.group(1) if m else "unlabelled"
            seq = tuple(n for n, t, r in zip(d["name"], d["type"], d["rank"]) if t == GPU and r == 0)
            by_kind.setdefault(kind, []).append(seq)
        for kind, seqs in sorted(by_kind.items()):
            distinct = len(set(seqs))
            print(f"{setting:16s} {kind:8s} {len(seqs):5d} steps {distinct:4d} distinct "
                  f"{100.0 * distinct / len(seqs):6.1f} per 100")
            t = total.setdefault(kind, [0, 0])
            t[0] += len(seqs)
            t[1] += distinct
    for kind, (n, d) in sorted(total.items()):
        print(f"{'all':16s} {kind:8s} {n:5d} steps {d:4d} distinct {100.0 * d / n:6.1f} per 100")
    return 0


if __name__ == "__main__":
    sys.exit(main())
