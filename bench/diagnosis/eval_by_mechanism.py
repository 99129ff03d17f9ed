#!/usr/bin/env python3
"""Recall of abnormal-step detection per fault mechanism, on a simulated dataset.

Joins `teller eval --write-predictions` (test steps of one method) with the ground truth
of the raw simulation (`teller simulate --preset paper`): a test step is a positive of a
mechanism in a view when the ground truth marks it anomalous in that view and its fault is
of that mechanism; recall = positives predicted abnormal / positives. Also prints the
false-positive rate on the steps without a fault.

usage: bench/diagnosis/eval_by_mechanism.py RAW_DIR PREDICTIONS.jsonl

`teller eval` now prints this table itself (per unit rather than per engine step, with the
timing-invisible mechanisms apart and the positives without evidence nodes counted on
their own; `--report` writes mechanism_recall.csv, docs/eval.md). This script stays for
the commands recorded in bench/README.md.
"""
import collections
import json
import os
import sys


def main():
    raw, predictions = sys.argv[1], sys.argv[2]
    truth = {}  # (setting, seq) -> (mechanism or None, {view: is_anomaly})
    for setting in sorted(os.listdir(raw)):
        path = os.path.join(raw, setting, "ground_truth.json")
        if not os.path.exists(path):
            continue
        g = json.load(open(path))
        mechanisms = {f["id"]: f["mechanism"] for f in g["faults"]}
        for s in g["steps"]:
            views = {v: s[v]["is_anomaly"] for v in ("vertical", "horizontal")}
            truth[(setting, s["seq"])] = (mechanisms.get(s["fault"]), views)
    hit = collections.Counter()
    pos = collections.Counter()
    negatives = collections.Counter()
    false_pos = collections.Counter()
    seen = set()
    for line in open(predictions):
        p = json.loads(line)
        key = (p["setting"], p["seq"], p["view"])
        if key in seen:  # one engine step holds several requests: count it once
            continue
        seen.add(key)
        t = truth.get((p["setting"], p["seq"]))
        if t is None:
            continue
        mechanism, views = t
        view = p["view"]
        if views[view]:
            pos[(mechanism, view)] += 1
            hit[(mechanism, view)] += bool(p["abnormal"])
        elif mechanism is None:
            negatives[view] += 1
            false_pos[view] += bool(p["abnormal"])
    print(f"{'mechanism':24s} {'vertical':>16s} {'horizontal':>16s}")
    for m in sorted({m for m, _ in pos}):
        cells = []
        for view in ("vertical", "horizontal"):
            n = pos[(m, view)]
            cells.append(f"{hit[(m, view)]:4d}/{n:<4d} {100 * hit[(m, view)] / n:5.1f}%" if n else
                         f"{'-':>16s}")
        print(f"{m:24s} {cells[0]:>16s} {cells[1]:>16s}")
    for view in ("vertical", "horizontal"):
        n = negatives[view]
        print(f"fault-free steps flagged ({view}): {false_pos[view]}/{n}"
              f" ({100 * false_pos[view] / max(1, n):.1f}%)")


if __name__ == "__main__":
    main()
