#!/usr/bin/env python3
"""Kernel substitution on real traces: in one step, every instance of a kernel family runs
under another name (a fallback path, another algorithm, the wrong kernel for a request),
taking F times as long; the stream's queue shifts behind it (the timing model of the
planted-fault benchmark, bench/diagnosis/planted/trace.py). Written from the Kineto JSON,
independently of `teller inject`.

Cases: every Kineto trace of ../shared/data/real with at least 3 ProfilerStep ranges; per
trace up to 2 compute kernel families that run in at least 3 steps (drawn with a generator
seeded by the file name), one step drawn among those that are not the first; factors 1
(another kernel of the same cost), 2 and 10 (a fallback far slower than the kernel it
replaced).

Scored per case, self-fit and with the unchanged trace as --baseline:
- top3: the new name or the family it replaced is among the first 3 top operators;
- listed (baseline): a `new_operators` finding lists the new name;
- replaced (baseline): that finding names the family it replaced ("It ran none of ..."),
  counted over the cases whose family ran in every step (else the baseline's steps do not
  all run it, and nothing is named);
- abnormal: the case's step is abnormal.

usage: bench/diagnosis/substituted_kernels.py [--teller build/bin/teller]
                                              [--data ../shared/data/real] [--out FILE.json]
"""
import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from planted.cases import kernel_families  # noqa: E402
from planted.trace import Trace, is_comm  # noqa: E402

STEP = re.compile(r"ProfilerStep#(\d+)$")
FACTORS = (1.0, 2.0, 10.0)
FAMILIES = 2


def steps_of(t):
    """The trace's ProfilerStep ranges, by start."""
    out = [i for i, k in t.kind.items() if k == "host" and STEP.search(t.name(i))]
    return sorted(out, key=lambda i: t.ts[i])


def by_step(t, steps, inst):
    """A family's instances by the step whose range holds their launch."""
    out = {}
    for g in inst:
        h = t.launch_of(g)
        if h is None:
            continue
        for s in steps:
            if t.ts[s] <= t.ts[h] <= t.end(s):
                out.setdefault(s, []).append(g)
                break
    return out


def cases(t, label):
    steps = steps_of(t)
    if len(steps) < 3:
        return []
    rng = random.Random("subst:" + label)
    fams = []
    for name, inst in sorted(kernel_families(t).items()):
        if is_comm(name):
            continue
        per = by_step(t, steps, inst)
        if len(per) >= 3:
            fams.append((name, per))
    out = []
    for name, per in rng.sample(fams, min(FAMILIES, len(fams))):
        later = [s for s in sorted(per, key=lambda s: t.ts[s]) if s != steps[0]]
        if not later:
            continue
        s = rng.choice(later)
        for f in FACTORS:
            out.append({"family": name, "step": s, "step_name": t.name(s), "factor": f,
                        "instances": per[s], "every_step": len(per) == len(steps)})
    return out


def write_case(t, case, path):
    extra = {g: int(round(t.dur[g] * (case["factor"] - 1))) for g in case["instances"]}
    nts, nend, info = t.solve(dur_extra={g: x for g, x in extra.items() if x > 0})
    t.write(path, nts, nend, info)
    # Renamed in the written file: the events are rewritten as JSON, the rest left as written.
    with open(path) as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    for g in case["instances"]:
        events[g]["name"] = case["new_name"]
    with open(path, "w") as f:
        json.dump(data, f)


def run(teller, path, baseline, js):
    cmd = [teller, "diagnose", path, "--json", js] + (["--baseline", baseline] if baseline else [])
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode not in (0, 3) or not os.path.exists(js):
        return None
    with open(js) as f:
        return json.load(f)


def score(rep, case):
    names = (case["new_name"], case["family"])
    top = [o.get("name", "") for o in rep.get("top_operators", [])[:3]]
    listed = replaced = False
    for f in rep.get("findings", []):
        if f.get("kind") != "new_operators":
            continue
        text = f.get("title", "") + " " + " ".join(f.get("details", []))
        listed |= case["new_name"] in text
        # The explanation shortens long names in the middle: their first 24 characters stay.
        said = f.get("explanation", "").split("It ran none of ", 1)
        replaced |= len(said) == 2 and case["family"][:24] in said[1].split(" there, ")[0]
    number = STEP.search(case["step_name"]).group(1)
    abnormal = any(s.get("abnormal") and str(s.get("step")) == number for s in rep.get("steps", []))
    return {"top3": any(n in x or x in n for n in names for x in top if x),
            "listed": listed, "replaced": replaced, "abnormal": abnormal}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--teller", default=os.path.join(here, "../../build/bin/teller"))
    ap.add_argument("--data", default=os.path.join(here, "../../../shared/data/real"))
    ap.add_argument("--out", help="write every case's result as JSON")
    a = ap.parse_args()
    files = []
    for sub in ("hta", "kineto", "tracelens"):
        d = os.path.join(a.data, sub)
        if os.path.isdir(d):
            files += [(sub + "/" + f, os.path.join(d, f)) for f in sorted(os.listdir(d))
                      if f.endswith(".json") or f.endswith(".json.gz")]
    if not files:
        sys.exit(f"no Kineto traces under {a.data}")
    work = tempfile.mkdtemp(prefix="teller-subst-")
    rows = []
    try:
        for label, path in files:
            try:
                t = Trace(path)
            except (KeyError, ValueError) as e:
                print("%-48s skipped: not a Kineto trace this bench reads (%s)" % (label[:48], e))
                continue
            for n, case in enumerate(cases(t, label)):
                case["new_name"] = "fallback_" + re.sub(r"\W", "_", case["family"])[:48]
                dst = os.path.join(work, "case.json")
                write_case(t, case, dst)
                row = {"trace": label, "family": case["family"], "factor": case["factor"],
                       "step": case["step_name"], "instances": len(case["instances"]),
                       "every_step": case["every_step"]}
                for mode, base in (("self", None), ("baseline", path)):
                    rep = run(a.teller, dst, base, os.path.join(work, "case.%s.json" % mode))
                    row[mode] = score(rep, case) if rep is not None else {"error": True}
                rows.append(row)
                print("%-48s x%.0f %3d inst  self %s  baseline %s" % (
                    label[:48], case["factor"], row["instances"],
                    "top3" if row["self"].get("top3") else "-",
                    " ".join(k for k in ("top3", "listed", "replaced", "abnormal")
                             if row["baseline"].get(k)) or "-"), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for f in FACTORS:
        sel = [r for r in rows if r["factor"] == f]
        if not sel:
            continue
        def pct(mode, key, rows=sel):
            return 100.0 * sum(bool(r[mode].get(key)) for r in rows) / max(1, len(rows))
        every = [r for r in sel if r["every_step"]]
        print("x%.0f, %d cases: self top3 %.1f%% abnormal %.1f%%; baseline top3 %.1f%% listed %.1f%% "
              "abnormal %.1f%%; what it replaced named in %.1f%% of the %d whose family ran in "
              "every step" % (
                  f, len(sel), pct("self", "top3"), pct("self", "abnormal"), pct("baseline", "top3"),
                  pct("baseline", "listed"), pct("baseline", "abnormal"),
                  pct("baseline", "replaced", every), len(every)))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
