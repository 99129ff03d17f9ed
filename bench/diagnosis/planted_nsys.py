#!/usr/bin/env python3
"""Planted faults in real Nsight Systems exports: an independent check of `teller diagnose`
on `nsys export --type sqlite` files (the Kineto counterpart is planted_faults.py).

Plants faults into the real exports of ../shared/data/real/nsys_pipit (*.sqlite.gz are
unpacked into the work folder) by editing a copy of the SQLite file with sqlite3 (start/end
of the changed rows only), with its own timing model (planted/nsys.py; nothing of
`teller inject`), and runs
    teller diagnose PERTURBED --json F                      (self-fit)
    teller diagnose PERTURBED --baseline ORIGINAL --json F  (baseline)
then scores the reports. Cases (seeded, --seed; planted/nsys_cases.py):
  kernel  x1.3/1.5/2/4 on windows of 3, 10, 30 consecutive instances of one kernel family
          (name and grid/block; 4 families per trace: one long enough for
          the widest window, one of the heaviest, two at random); later work on the stream follows,
          the sync calls (and their SYNCHRONIZATION records) that waited for it return
          later, and so do the later host events and launches of that thread
  launch  +20/+100 us on each launch call of one kernel family (2 per trace) or under
          one NVTX range name (all calls, and a window of 10)
  copy    x2/x4 on 3 and 10 consecutive copies of one kind and size
Scores: kernel/copy: the planted name (as Teller names it: demangled kernel name,
"[CUDA memcpy <kind>]") in the top 3 of top_operators; launch: the launch API or an
enclosing NVTX range in the top 3 ("pre" marks cases whose accepted name was already in
the top 3 of the unperturbed trace's report); untouched: a root evidence entry of an
abnormal step names a family the plant did not touch. The unperturbed exports are run
too (self, and against themselves as baseline): they must have 0 abnormal steps.

usage: bench/diagnosis/planted_nsys.py [--teller build/bin/teller] [--data ../shared/data/real]
          [--seed 1] [-j 2] [--check] [--out FILE] [--keep DIR] [--only SUBSTR] [--verbose]
--check verifies the perturbed exports (only start/end of event rows changed, every other
table as it was, streams serial, exact planted time, no other duration change but the
waiting sync calls, their records and the enclosing host events, GPU work after its
launch, syncs after the work they waited for, no event later by more than the time
planted) without running teller.
Exits 0 (a benchmark, not a test); --check exits 1 when a perturbation is wrong.
"""
import argparse
import bisect
import concurrent.futures
import gzip
import hashlib
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from planted import nsys_cases as C  # noqa: E402
from planted.cases import KERNEL_WINDOWS  # noqa: E402
from planted.common import add_common_args, print_cost_and_errors  # noqa: E402
from planted.nsys import EVENT_TABLES, NsysTrace, tables  # noqa: E402
from planted.score import Report  # noqa: E402


def discover(data, only, work):
    """(label, path of the plain .sqlite) per export; .gz files are unpacked into work."""
    d = os.path.join(data, "nsys_pipit")
    out = []
    if not os.path.isdir(d):
        return out
    for f in sorted(os.listdir(d)):
        if not (f.endswith(".sqlite") or f.endswith(".sqlite.gz")):
            continue
        label = "nsys_pipit/" + f
        if only and not any(s in label for s in only):
            continue
        src = os.path.join(d, f)
        if f.endswith(".gz"):
            dst = os.path.join(work, "orig", f[:-3])
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            if not os.path.exists(dst):
                with gzip.open(src, "rb") as a, open(dst + ".part", "wb") as b:
                    shutil.copyfileobj(a, b)
                os.replace(dst + ".part", dst)
            src = dst
        out.append((label, src))
    return out


def gen_cases(t, rng):
    skip = C.eligible(t)
    cases = []
    if skip is None:
        cases += C.kernel_cases(t, rng)
    cases += C.launch_cases(t, rng) + C.copy_cases(t, rng)
    return cases, skip


def build_case(t, case, path):
    """Solves and writes one case; returns (plan, new_ts, new_end, info)."""
    plan = case.pop("plan")
    nts, nend, info = t.solve(**plan)
    t.write(path, nts, nend)
    touched = set()
    for i in nts:
        if t.kind[i] != "point" and nend[i] - nts[i] != t.dur[i]:
            touched.add(t.name(i))
    for g in plan.get("dur_extra", {}):
        touched.add(t.name(g))
        h = t.launch_of(g)
        if h is not None:
            touched.update(t.name(a) for a in [h] + t.ancestors(h))
    for h in plan.get("host_ins", {}):
        touched.update(t.name(a) for a in [h] + t.ancestors(h))
    case["touched"] = sorted(touched)
    case["moved_events"] = len(nts)
    case["sync_longer"] = len(info["sync_add"])
    case["planted_ns"] = sum(plan.get("dur_extra", {}).values()) + sum(plan.get("host_ins", {}).values())
    return plan, nts, nend, info


def diagnose(teller, perturbed, original, js, baseline):
    cmd = [teller, "diagnose", perturbed, "--json", js]
    if baseline:
        cmd += ["--baseline", original]
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p, time.monotonic() - t0


def family_evidence(rep, names):
    """Evidence entries (any step) that name one of names: count, shared, root, in abnormal."""
    n = shared = root = abnormal = 0
    for s in rep.d.get("steps", []):
        for e in s.get("evidence", []):
            if e.get("name") in names:
                n += 1
                shared += bool(e.get("shared"))
                root += e.get("role", "root") == "root"
                abnormal += bool(s.get("abnormal"))
    return {"entries": n, "shared": shared, "root": root, "in_abnormal": abnormal}


def score_case(case, rep):
    names = set(case["accept"])
    pos = None
    for j, e in enumerate(rep.top):
        if e.get("name") in names:
            pos = j + 1
            break
    top = rep.top[:3]
    return {"hit": rep.in_top(case["accept"]), "rank": pos,
            "untouched": rep.names_untouched(set(case["touched"])),
            "abnormal": len(rep.abnormal_steps()), "steps": rep.d.get("steps_total"),
            "top3": rep.top_names(3), "top3_suspicion": [e.get("suspicion") for e in top],
            "top3_layer": [e.get("layer") for e in top],
            "evidence": family_evidence(rep, names),
            "untouched_names": sorted({e.get("name", "") for e in rep.root_evidence()
                                       if e.get("name", "") not in set(case["touched"])})[:5]}


def run_diag(a, target, orig, js_base, score):
    out = {}
    for mode in ("self", "baseline"):
        js = js_base + ".%s.json" % mode
        p, dt = diagnose(a.teller, target, orig, js, mode == "baseline")
        if os.path.exists(js):
            try:
                r = score(Report(js))
            except (ValueError, KeyError) as e:
                r = {"hit": False, "untouched": False, "error": "bad report: %s" % e}
            if not a.keep:
                os.remove(js)
        else:
            r = {"hit": False, "untouched": False,
                 "error": "no report (exit %d): %s" % (p.returncode, p.stderr.strip()[-200:])}
        r["seconds"] = round(dt, 3)
        out[mode] = r
    return out


def run_case(a, case, path, orig, pre_top3):
    res = run_diag(a, path, orig, path, lambda rep: score_case(case, rep))
    case.update(res)
    case["pre_top3"] = bool(set(case["accept"]) & set(pre_top3))
    if not a.keep:
        os.remove(path)
    return case


def healthy(a, label, orig, work):
    def score(rep):
        return {"abnormal": len(rep.abnormal_steps()), "steps": rep.d.get("steps_total"),
                "top3": rep.top_names(3), "top_all": rep.top_names(1000)}
    r = run_diag(a, orig, orig, os.path.join(work, "healthy-" + os.path.basename(orig)), score)
    return {"trace": label, **r}


# ---------------------------------------------------------------------- --check
def table_digest(db, table, skip_cols=()):
    cols = [r[0] for r in db.execute("SELECT name FROM pragma_table_info(?)", (table,))]
    keep = [c for c in cols if c not in skip_cols]
    h = hashlib.sha256()
    n = 0
    db.text_factory = bytes  # exports hold strings that are not UTF-8
    if keep:
        sel = ", ".join('"%s"' % c for c in keep)
        for r in db.execute('SELECT %s FROM "%s" ORDER BY rowid' % (sel, table)):
            h.update(repr(r).encode())
            n += 1
    db.text_factory = str
    return n, h.hexdigest()


def check_case(t, case, plan, path):
    """Re-reads the written export and checks the perturbation; returns failure strings."""
    tag = "%s[%s]" % (case["id"], os.path.basename(t.path))
    fails = []
    a = sqlite3.connect("file:%s?mode=ro" % t.path, uri=True)
    b = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    try:
        ta, tb = tables(a), tables(b)
        if ta != tb:
            return [tag + ": table list changed"]
        for tab in ta:
            skip = ("start", "end") if tab in EVENT_TABLES else ()
            if table_digest(a, tab, skip) != table_digest(b, tab, skip):
                fails.append(tag + ": table %s changed beyond start/end" % tab)
        nts, nend = dict(t.ts), {i: t.end(i) for i in t.ts}
        for tab in EVENT_TABLES:
            if tab not in ta:
                continue
            rows = {rid: (s, e) for rid, s, e in b.execute('SELECT rowid, start, "end" FROM %s' % tab)}
            for i, (tt, rid) in enumerate(t.row):
                if tt != tab:
                    continue
                s, e = rows[rid]
                nts[i] = s
                nend[i] = s if t.kind[i] == "point" else (e if e is not None else s)
        # rows the model skipped (no start / no thread) must be untouched: covered by
        # comparing every row's start/end of the two files outside t.row
        for tab in EVENT_TABLES:
            if tab not in ta:
                continue
            known = {rid for tt, rid in t.row if tt == tab}
            ra = {rid: (s, e) for rid, s, e in a.execute('SELECT rowid, start, "end" FROM %s' % tab)
                  if rid not in known}
            rb = {rid: (s, e) for rid, s, e in b.execute('SELECT rowid, start, "end" FROM %s' % tab)
                  if rid not in known}
            if ra != rb:
                fails.append(tag + ": %s rows outside the model moved" % tab)
    finally:
        a.close()
        b.close()
    ndur = {i: nend[i] - nts[i] for i in nts}
    extra = dict(plan.get("dur_extra", {}))
    extra.update(plan.get("host_ins", {}))
    for i, d in extra.items():
        if ndur[i] - t.dur[i] != d:
            fails.append(tag + ": planted event %d got %d ns, planned %d" % (i, ndur[i] - t.dur[i], d))
    longer_calls = {i for i in t.syncs if ndur[i] > t.dur[i]} | set(plan.get("host_ins", {}))
    by_thread = {}
    for i in longer_calls:
        by_thread.setdefault(t.key[i], []).append((t.ts[i], t.end(i)))
    for lst in by_thread.values():
        lst.sort()

    def encloses_longer_call(i):
        lst = by_thread.get(t.key[i], [])
        j = bisect.bisect_left(lst, (t.ts[i], -1))
        return j < len(lst) and lst[j][1] <= t.end(i)
    for i in t.ts:
        if i in extra or ndur[i] == t.dur[i]:
            continue
        kd = t.kind[i]
        if kd == "gsync" and t.gsync_of.get(i) in longer_calls and \
                ndur[i] - t.dur[i] == ndur[t.gsync_of[i]] - t.dur[t.gsync_of[i]]:
            continue  # the record of a sync call that waited longer
        if kd == "host" and ndur[i] > t.dur[i] and encloses_longer_call(i):
            continue  # a longer sync or launch call, or a row/range that encloses one
        fails.append(tag + ": %s event %d (%s) changed duration by %d ns" % (
            kd, i, t.name(i)[:60], ndur[i] - t.dur[i]))
    for m, h in t.gsync_of.items():  # a SYNCHRONIZATION record follows its host call
        if (nts[m] - t.ts[m], nend[m] - t.end(m)) != (nts[h] - t.ts[h], nend[h] - t.end(h)):
            fails.append(tag + ": sync record %d did not follow its call %d" % (m, h))
    for k, lst in t.streams.items():
        prev = run0 = run1 = None
        for g in lst:
            if prev is not None:
                if nts[g] < nts[prev]:
                    fails.append(tag + ": stream %s reordered at %d" % (k, g))
                if max(0, run1 - nts[g]) > max(0, run0 - t.ts[g]):
                    fails.append(tag + ": stream %s: event %d overlaps (%d ns > %d ns)" % (
                        k, g, run1 - nts[g], max(0, run0 - t.ts[g])))
                if nts[g] < t.ts[g]:
                    fails.append(tag + ": GPU event %d starts earlier" % g)
            run0 = t.end(g) if run0 is None else max(run0, t.end(g))
            run1 = nend[g] if run1 is None else max(run1, nend[g])
            prev = g
    for c, p in t.parent.items():
        if not (nts[p] <= nts[c] and nend[c] <= nend[p]):
            fails.append(tag + ": event %d no longer inside its parent %d" % (c, p))
    for k, lst in t.threads.items():  # a thread's order and gaps: shifts never shrink a gap
        for x, y in zip(lst, lst[1:]):
            if nts[y] - nts[x] < t.ts[y] - t.ts[x]:
                fails.append(tag + ": host events %d, %d closer than before" % (x, y))
    for h in t.launchers:
        own_wait = (ndur[h] - t.dur[h]) - extra.get(h, 0) if h in t.syncs else 0
        for g in t.gpu_of_launch(h):
            if nend[h] != t.end(h) and nts[g] < nend[h] - own_wait + min(t.ts[g] - t.end(h), 0):
                fails.append(tag + ": GPU event %d starts before its launch %d returned" % (g, h))
    for s in t.syncs:  # GPU work that completed while a sync call waited: still before it returns
        for k in t.sync_keys[s]:
            ends, idx = t.stream_ends[k]
            lo, hi = bisect.bisect_right(ends, t.ts[s]), bisect.bisect_right(ends, t.end(s))
            for g in idx[lo:hi]:
                if nend[s] - nend[g] < t.end(s) - t.end(g):
                    fails.append(tag + ": sync %d (%s) returns %d ns sooner after GPU event %d" % (
                        s, t.name(s), t.end(s) - t.end(g) - nend[s] + nend[g], g))
    # Wall time: the plant added at least what was planted to the GPU or host timeline.
    if plan.get("dur_extra"):
        k = t.key[next(iter(plan["dur_extra"]))]
        last = max(t.streams[k], key=lambda g: t.end(g))
        grew = max(nend[g] for g in t.streams[k]) - t.end(last)
        if grew < 0:
            fails.append(tag + ": stream %s ends earlier" % (k,))
    # Nothing moves by more than the time planted: a delay is passed on, never amplified.
    most = max((nend[i] - t.end(i) for i in t.ts), default=0)
    planted = sum(extra.values())
    if most > planted:
        fails.append(tag + ": an event ends %d ns later, more than the %d ns planted" % (most, planted))
    case["_check"] = sum(1 for i in t.ts if nts[i] != t.ts[i] or nend[i] != t.end(i))
    return fails


# ---------------------------------------------------------------------- main
def pct(k, n):
    return "%5.1f%%" % (100.0 * k / n) if n else "    -"


def summarize(rows, health):
    print("\nunperturbed exports (abnormal steps must be 0):")
    for h in health:
        print("  %-55s self %s of %s steps abnormal, baseline (itself) %s of %s" % (
            h["trace"], h["self"].get("abnormal"), h["self"].get("steps"),
            h["baseline"].get("abnormal"), h["baseline"].get("steps")))
    groups = {}
    for r in rows:
        groups.setdefault((r["cls"], r["param"]), []).append(r)
    print("\n%-8s %-8s %5s  %-17s %-17s %-19s %-17s" % (
        "class", "param", "cases", "found self/base", "new* self/base", "untouched self/base",
        "abnormal self/base"))
    for (cls, param), lst in sorted(groups.items()):
        n = len(lst)
        f = [sum(r[m]["hit"] for r in lst) for m in ("self", "baseline")]
        fn = [sum(r[m]["hit"] and not r["pre_top3"] for r in lst) for m in ("self", "baseline")]
        u = [sum(r[m]["untouched"] for r in lst) for m in ("self", "baseline")]
        ab = [sum(1 for r in lst if r[m].get("abnormal")) for m in ("self", "baseline")]
        unit = "x" if cls in ("kernel", "copy") else "+us "
        print("%-8s %-8s %5d  %s / %s  %s / %s  %s / %s    %s / %s" % (
            cls, "%s%g" % (unit, param), n, pct(f[0], n), pct(f[1], n), pct(fn[0], n), pct(fn[1], n),
            pct(u[0], n), pct(u[1], n), pct(ab[0], n), pct(ab[1], n)))
    print("  *new: found, and the accepted name was not already in the top 3 of the unperturbed report")
    print("  abnormal: cases with at least one abnormal step")
    by_trace = {}
    for r in rows:
        by_trace.setdefault((r["trace"], r["cls"]), []).append(r)
    print("\nper trace:")
    for (tr, cls), lst in sorted(by_trace.items()):
        n = len(lst)
        print("  %-50s %-7s %3d cases  found self %s base %s" % (
            tr, cls, n, pct(sum(r["self"]["hit"] for r in lst), n),
            pct(sum(r["baseline"]["hit"] for r in lst), n)))
    for w in KERNEL_WINDOWS:
        kw = [r for r in rows if r["cls"] == "kernel" and r["window"] == w]
        if kw:
            print("kernel window %-3d: self %s, baseline %s of %d" % (
                w, pct(sum(r["self"]["hit"] for r in kw), len(kw)),
                pct(sum(r["baseline"]["hit"] for r in kw), len(kw)), len(kw)))
    print_cost_and_errors(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_args(ap, "exports")
    a = ap.parse_args()
    if not a.check and not os.access(a.teller, os.X_OK):
        sys.exit("no teller binary at %s (--teller)" % a.teller)
    work = a.keep or tempfile.mkdtemp(prefix="teller-planted-nsys-")
    os.makedirs(work, exist_ok=True)
    t_start = time.monotonic()
    units = discover(a.data, a.only, work)
    if not units:
        sys.exit("no Nsight Systems exports under %s/nsys_pipit" % a.data)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.j))
    slots = threading.Semaphore(2 * max(1, a.j))  # bounds the perturbed exports on disk
    futures, n_case, fails, checked, health, rows = [], 0, [], 0, [], []

    def release(_):
        slots.release()

    for label, orig in units:
        rng = random.Random("%d:%s" % (a.seed, label))
        t = NsysTrace(orig)
        cases, skip = gen_cases(t, rng)
        counts = {}
        for c in cases:
            counts[c["cls"]] = counts.get(c["cls"], 0) + 1
        print("plant %-55s %s%s" % (label, ", ".join("%s %d" % kv for kv in sorted(counts.items())),
                                    ("; no kernel cases: " + skip) if skip else ""))
        sys.stdout.flush()
        pre_top3 = []
        if not a.check:
            h = healthy(a, label, orig, work)
            health.append(h)
            pre_top3 = h["self"].get("top3", []) + h["baseline"].get("top3", [])
        fails_before = len(fails)
        for c in cases:
            n_case += 1
            c["id"] = "case%04d" % n_case
            c["trace"] = label
            path = os.path.join(work, "%s-%s" % (c["id"], os.path.basename(orig)))
            if a.check:
                plan, _, _, _ = build_case(t, c, path)
                fails += check_case(t, c, plan, path)
                checked += 1
                if not a.keep:
                    os.remove(path)
                rows.append(c)
                continue
            slots.acquire()
            build_case(t, c, path)
            fut = pool.submit(run_case, a, c, path, orig, pre_top3)
            fut.add_done_callback(release)
            futures.append(fut)
        if a.check:
            print("  checked %d cases, %d failures" % (len(cases), len(fails) - fails_before))
            sys.stdout.flush()
    pool.shutdown(wait=True)
    if a.check:
        by = {}
        for c in rows:
            by[c["cls"]] = by.get(c["cls"], 0) + 1
        print("\ncheck: %d perturbed exports (%s); %d events moved or lengthened, %d sync calls "
              "made longer; %d failures" % (checked, ", ".join("%s %d" % kv for kv in sorted(by.items())),
                                            sum(c["moved_events"] for c in rows),
                                            sum(c["sync_longer"] for c in rows), len(fails)))
        for f in fails[:30]:
            print("  FAIL " + f)
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
        sys.exit(1 if fails else 0)
    rows = [f.result() for f in futures]
    for r in rows:
        for k in [k for k in r if k.startswith("_")]:
            del r[k]
        if a.verbose:
            print("%s %-7s %-5s %-8s %-60s self %d base %d" % (
                r["id"], r["cls"], r["param"], r["window"], r["family"][:60], r["self"]["hit"],
                r["baseline"]["hit"]))
    summarize(rows, health)
    print("%d cases, %d diagnoses, %.0f s wall" % (len(rows), 2 * len(rows) + 2 * len(health),
                                                    time.monotonic() - t_start))
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"teller": a.teller, "seed": a.seed, "healthy": health, "cases": rows}, f, indent=1)
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
