#!/usr/bin/env python3
"""Planted faults in real traces: an independent check of `teller diagnose`.

Plants faults into the real Kineto traces of ../shared/data/real by editing the trace JSON
itself (its own timing model, planted/trace.py; nothing of `teller inject`), writes each
perturbed trace to a temporary folder and runs
    teller diagnose PERTURBED --json F                      (self-fit)
    teller diagnose PERTURBED --baseline ORIGINAL --json F  (baseline)
then scores the reports. Cases (seeded, --seed):
  kernel     x1.3/1.5/2/4 on windows of 3, 10, 30 consecutive instances of one kernel
             family (3 families per trace, one launched from a backward pass if any)
  launch     +20/+100 us on each launch call under one cpu_op family (all, or 10)
  hostop     +50/+200 us of the host's own time in each instance of one cpu_op family
             (all, or 10): framework or Python overhead inside the operator
  straggler  param_dlrm_8rank: +200/+1000 us of one rank's compute before a collective;
             every shared collective completes its own transfer time after its last
             rank arrives, so the other ranks wait for the delayed one when it arrives
             last (cases where it still arrives before the last rank are skipped), and
             later collectives follow
  copy       x2/x4 on 3 and 10 consecutive copies of one kind and size
  link       rank folders: one collective's own transfer time x2/x4 on every rank (a slower
             link or a fallback transport), on 1 and 3 consecutive instances of it; later
             collectives follow
  pause      the host thread of a step pauses between two of its operations, outside all of
             them, for 5%/25% of the median step (2 steps after the first; traces with 3+
             ProfilerStep#N ranges)
  throttle   the GPU itself is slower for one step: every compute kernel the step launches
             x1.3/x1.6 (1 step after the first; traces with 3+ ProfilerStep#N ranges)
  gpu        rank folders: one rank's GPU is slower, every compute kernel of the rank
             x1.3/x1.6 (3 ranks drawn); the collectives are solved again as for a straggler
  cpu        the host itself is slower for one step (CPU contention): the own time of every
             host event of the process inside the step x1.3/x2 (1 step after the first;
             traces with 3+ ProfilerStep#N ranges); rank folders: one rank's host slower
             all through (3 ranks drawn), the collectives solved again
Scores: kernel/copy: the planted name in the top 3 of top_operators; launch: the
launching cpu_op or the launch API in the top 3; hostop: the op in the top 3;
pause: the step's range in the top 3; throttle: an abnormal step of
category runtime_driver or a slow_gpu finding in that step; gpu: a slow_gpu finding on the
rank, or an abnormal runtime_driver step whose first root evidence is on it; cpu: a
slow_host finding in that step (rank folders: on that rank) or an abnormal
scheduling_software step there (whose first root evidence is on it);
straggler: top_operators[0] on the straggler rank and not a comm kernel; untouched: a root evidence entry of an abnormal
step names a family the plant did not touch.

usage: bench/diagnosis/planted_faults.py [--teller build/bin/teller] [--data ../shared/data/real]
          [--seed 1] [-j 2] [--quick] [--check] [--out FILE] [--keep DIR] [--only SUBSTR]
--check verifies the perturbed traces (streams serial, exact planted time, no other
duration change but the waiting/enclosing events) without running teller.
Exits 0 (a benchmark, not a test); --check exits 1 when a perturbation is wrong.
"""
import argparse
import bisect
import concurrent.futures
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from planted import cases as C  # noqa: E402
from planted.common import add_common_args, print_cost_and_errors  # noqa: E402
from planted.score import Report  # noqa: E402
from planted.trace import Trace, is_comm, micros_to_ns, load_with_texts  # noqa: E402

QUICK = ("critical_path__alexnet", "h100__Qwen", "inference__sglang_decode", "param_dlrm_8rank")


def discover(data, only):
    out = []
    for sub in ("hta", "kineto", "tracelens"):
        d = os.path.join(data, sub)
        if not os.path.isdir(d):
            continue
        for f in sorted(os.listdir(d)):
            if f.endswith(".json") or f.endswith(".json.gz"):
                out.append((sub + "/" + f, [os.path.join(d, f)]))
    d = os.path.join(data, "param_dlrm_8rank")
    if os.path.isdir(d):
        out.append(("param_dlrm_8rank/", sorted(os.path.join(d, f) for f in os.listdir(d)
                                               if ".json" in f)))
    return [o for o in out if not only or any(s in o[0] for s in only)]


def out_name(path):
    b = os.path.basename(path)
    return b[:-3] if b.endswith(".gz") else b


def build_case(unit, case, files, dirpath):
    """Solves and writes one case; returns what the scoring and the check need."""
    os.makedirs(dirpath)
    plans = case.pop("plans")
    solved = {}
    for fi, t in enumerate(unit):
        dst = os.path.join(dirpath, out_name(files[fi]))
        if fi in plans:
            nts, nend, info = t.solve(**plans[fi])
            t.write(dst, nts, nend, info)
            solved[fi] = (nts, nend, info)
        elif len(unit) > 1:
            shutil.copyfile(files[fi], os.path.join(dirpath, os.path.basename(files[fi])))
    touched = set()
    for fi, (nts, nend, info) in solved.items():
        t = unit[fi]
        for i in nts:
            if nend[i] - nts[i] != t.dur[i]:
                touched.add(t.name(i))
        p = plans[fi]
        for g in p.get("dur_extra", {}):
            touched.add(t.name(g))
            h = t.launch_of(g)
            if h is not None:
                touched.update(t.name(a) for a in [h] + t.ancestors(h))
        for h in p.get("host_ins", {}):
            touched.update(t.name(a) for a in [h] + t.ancestors(h))
        for g in list(p.get("min_end", {})) + list(p.get("min_start", {})):
            touched.add(t.name(g))
        if case["cls"] == "straggler" and fi == case["file"]:
            names = set()
            for g in p["dur_extra"]:
                if is_comm(t.name(g)):
                    continue  # the collective it was late to, not its compute
                names.add(t.name(g))
                h = t.launch_of(g)
                if h is not None:
                    names.update(t.name(a) for a in [h] + t.ancestors(h))
            case["compute_names"] = sorted(names)
    case["touched"] = sorted(touched)
    case["moved_events"] = sum(len(s[0]) for s in solved.values())
    case["sync_longer"] = sum(len(s[2]["sync_add"]) for s in solved.values())
    return plans, solved


def solve_collectives(ranks, comms, r, plan, coll, max_rounds=20, transfer_scale=None):
    """Plans for every rank (in rank order) when rank r runs `plan`: every collective the
    ranks share completes its own transfer time after its last rank arrives,
        end_q = max_q' start_q' + (original end_q - original last start),
    so that a rank arriving later waits less, and the others wait for the last one (the
    ranks' clocks are one host's here). A rank's later collectives start later on their
    streams, so the rounds repeat until no collective moves. Returns the plans and how
    much later the collective `coll` (rank r's event) completes. `transfer_scale` ({shared
    collective key: factor}) makes those collectives' own transfer time that many times
    longer on every rank (a slower link)."""
    n = len(ranks)
    shared = sorted(set.intersection(*(set(m) for m in comms)))
    # A collective whose ranks complete before its last one arrives is not a synchronizing
    # one (a pairing the names do not hold): it keeps its kernels' own timing.
    base = {}
    for ck in shared:
        last = max(ranks[q].ts[comms[q][ck]] for q in range(n))
        transfer = [ranks[q].end(comms[q][ck]) - last for q in range(n)]
        if min(transfer) >= 0:
            f = (transfer_scale or {}).get(ck, 1.0)
            base[ck] = (last, [int(round(x * f)) for x in transfer])
    planted = dict(plan.get("dur_extra", {}))
    plans = [{} for _ in range(n)]
    plans[r] = dict(plan)
    extra = [dict() for _ in range(n)]
    shift = 0
    for _ in range(max_rounds):
        starts = []
        for q in range(n):
            p = dict(plans[q])
            p["dur_extra"] = {**(planted if q == r else {}), **extra[q]}
            nts, _, _ = ranks[q].solve(**p)
            starts.append(nts)
        changed = False
        for ck, (last, transfer) in base.items():
            new_last = max(starts[q].get(comms[q][ck], ranks[q].ts[comms[q][ck]]) for q in range(n))
            for q in range(n):
                g = comms[q][ck]
                start = starts[q].get(g, ranks[q].ts[g])
                d = new_last + transfer[q] - start - ranks[q].dur[g]
                if extra[q].get(g, 0) != d:
                    changed = True
                    if d:
                        extra[q][g] = d
                    else:
                        extra[q].pop(g, None)
            if comms[r][ck] == coll:
                shift = new_last - last
        if not changed:
            break
    else:
        raise RuntimeError("collective timing did not converge")
    for q in range(n):
        d = {**(planted if q == r else {}), **extra[q]}
        if d:
            plans[q] = dict(plans[q], dur_extra=d)
    return plans, shift


def gen_cases(label, files, rng, quick):
    """Yields (unit, case-with-plans) for one trace unit, or a skip reason."""
    unit = [Trace(f) for f in files]
    reasons = [C.eligible(t) for t in unit]
    if all(reasons):
        return unit, [], reasons[0]
    ok = [i for i, r in enumerate(reasons) if r is None]
    fi = rng.choice(ok)
    t = unit[fi]
    fams = 1 if quick else C.KERNEL_FAMILIES
    out = []
    # Host-op cases draw from a generator of their own, so that adding them left every
    # other case as it was.
    host_rng = random.Random("hostop:" + label)
    pause_rng = random.Random("pause:" + label)
    for c in C.kernel_cases(t, rng, fams) + C.launch_cases(t, rng, 1 if quick else C.LAUNCH_FAMILIES) + \
            C.copy_cases(t, rng) + C.hostop_cases(t, host_rng, 1 if quick else C.HOSTOP_FAMILIES) + \
            C.pause_cases(t, pause_rng, 1 if quick else C.PAUSE_STEPS) + \
            C.throttle_cases(t, random.Random("throttle:" + label)) + \
            C.cpu_cases(t, random.Random("cpu:" + label)):
        c["plans"] = {fi: c.pop("plan")}
        c["file"] = fi
        out.append(c)
    if len(unit) > 1:
        order = sorted(range(len(unit)), key=lambda i: unit[i].rank if unit[i].rank is not None else i)
        ranks = [unit[i] for i in order]
        comms = [C.comm_kernels(t) for t in ranks]
        tried = [0, 5] if quick else None
        for c in C.straggler_cases(ranks, rng, tried, 1 if quick else C.STRAGGLER_COLLECTIVES):
            r = c["rank"]
            fi_r = order[r]
            cidx = c.pop("coll")
            c.pop("coll_by_rank")
            plans_by_rank, shift = solve_collectives(ranks, comms, r, c.pop("plan"), cidx)
            if shift <= 0:
                continue  # the delayed rank still arrives before the last one: nobody waits
            plans = {order[q]: p for q, p in enumerate(plans_by_rank) if p}
            c["plans"], c["file"], c["wait_us"] = plans, fi_r, shift / 1000
            out.append(c)
        for c in C.gpu_cases(ranks, random.Random("gpu:" + label)):
            plans_by_rank, _ = solve_collectives(ranks, comms, c["rank"], c.pop("plan"), None)
            c["plans"], c["file"] = {order[q]: p for q, p in enumerate(plans_by_rank) if p}, order[c["rank"]]
            out.append(c)
        for c in C.cpu_rank_cases(ranks, random.Random("cpu:" + label)):
            plans_by_rank, _ = solve_collectives(ranks, comms, c["rank"], c.pop("plan"), None)
            c["plans"], c["file"] = {order[q]: p for q, p in enumerate(plans_by_rank) if p}, order[c["rank"]]
            out.append(c)
        for c in C.link_cases(ranks, random.Random("link:" + label)):
            scale = c.pop("scale")
            plans_by_rank, _ = solve_collectives(ranks, comms, 0, {}, None,
                                                 transfer_scale=scale)
            plans = {order[q]: p for q, p in enumerate(plans_by_rank) if p}
            if not plans:
                continue  # none of its collectives synchronizes the ranks
            c["plans"], c["file"] = plans, order[0]
            out.append(c)
    return unit, out, None


def diagnose(teller, perturbed, original, js, baseline):
    cmd = [teller, "diagnose", perturbed, "--json", js]
    if baseline:
        cmd += ["--baseline", original]
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p, time.monotonic() - t0


def score_case(case, rep):
    cls = case["cls"]
    out = {}
    if cls == "straggler":
        hit = rep.straggler_named(case["rank_id"])
        # Stricter: what is named first is the delayed compute itself (the kernel, its
        # launch call or an op that encloses it), not just anything on that rank.
        out["hit_compute"] = hit and rep.in_top(case["compute_names"], 1)
    elif cls == "throttle":
        step = case["window"].rsplit("#", 1)[-1]
        hit = rep.abnormal_category(case["accept"][0]) or rep.slow_gpu(step=step)
    elif cls == "gpu":
        hit = rep.slow_gpu(rank=case["rank_id"])
    elif cls == "cpu" and case["window"] == "-":
        hit = rep.slow_host(rank=case["rank_id"])
    elif cls == "cpu":
        hit = rep.slow_host(step=case["window"].rsplit("#", 1)[-1])
    else:
        hit = rep.in_top(case["accept"])
    out.update({"hit": hit, "untouched": rep.names_untouched(set(case["touched"])),
                "abnormal": sum(1 for _ in rep.abnormal_steps()), "top3": rep.top_names(3),
                "version": 2 if rep.v2 else 1})
    return out


def run_case(a, case, dirpath, orig):
    target = dirpath if case["_multi"] else os.path.join(dirpath, os.listdir(dirpath)[0])
    for mode in ("self", "baseline"):
        js = os.path.join(dirpath + ".%s.json" % mode)
        p, dt = diagnose(a.teller, target, orig, js, mode == "baseline")
        if os.path.exists(js):
            try:
                r = score_case(case, Report(js))
            except (ValueError, KeyError) as e:
                r = {"hit": False, "untouched": False, "error": "bad report: %s" % e}
            os.remove(js)
        else:
            r = {"hit": False, "untouched": False,
                 "error": "no report (exit %d): %s" % (p.returncode, p.stderr.strip()[-200:])}
        r["seconds"] = round(dt, 3)
        case[mode] = r
    if not a.keep:
        shutil.rmtree(dirpath, ignore_errors=True)
    return case


# ---------------------------------------------------------------------- --check
def check_case(unit, files, case, plans, dirpath):
    """Re-reads the written files and checks the perturbation; returns failure strings."""
    fails = []
    # Nothing can end later than it did by more than all the time planted (in every file
    # of the case: a straggler's delay is waited for on the other ranks).
    # Cases with waits on other ranks (min_start, min_end: a straggler) are bounded by
    # their own checks.
    planted_total = sum(sum(p.get("dur_extra", {}).values()) + sum(p.get("host_ins", {}).values()) +
                        sum(d for _, _, d in p.get("pause_ins", []))
                        for p in plans.values())
    if any(p.get("min_start") or p.get("min_end") for p in plans.values()):
        planted_total = float("inf")
    for fi, plan in plans.items():
        t = unit[fi]
        path = os.path.join(dirpath, out_name(files[fi]))
        try:
            _, events, texts = load_with_texts(path)
        except Exception as e:  # noqa: BLE001 - any parse failure is a failed check
            return ["%s: does not parse: %s" % (path, e)]
        tag = "%s[%s]" % (case["id"], os.path.basename(path))
        if len(events) != len(t.events):
            return [tag + ": event count changed"]
        nts, nend = dict(t.ts), {i: t.end(i) for i in t.ts}
        for i, (e0, e1) in enumerate(zip(t.events, events)):
            if texts[i] == t.texts[i] or not isinstance(e0, dict):
                continue  # written as it was read
            a0 = {k: v for k, v in e0.items() if k not in ("ts", "dur")}
            a1 = {k: v for k, v in e1.items() if k not in ("ts", "dur")}
            if a0 != a1:
                fails.append(tag + ": event %d changed beyond ts/dur" % i)
            elif e0.get("ph") != "X" and e0.get("dur") != e1.get("dur"):
                fails.append(tag + ": non-X event %d changed dur" % i)
            elif e0.get("ph") != "X" and e0.get("ph") not in ("s", "f", "t", "i", "I"):
                fails.append(tag + ": non-X event %d moved" % i)
            elif i in t.ts:
                nts[i] = micros_to_ns(e1["ts"])
                nend[i] = nts[i] + micros_to_ns(e1["dur"])
        ndur = {i: nend[i] - nts[i] for i in nts}
        for k, lst in t.flows.items():  # flow ends on a GPU stream stay on their event
            if k not in t.streams:
                continue
            start = {t.ts[g]: g for g in t.streams[k]}
            for ft, j in lst:
                g = start.get(ft)
                if g is not None and micros_to_ns(events[j]["ts"]) != nts[g]:
                    fails.append(tag + ": flow event %d left its GPU event %d" % (j, g))
        extra = dict(plan.get("dur_extra", {}))
        extra.update(plan.get("host_ins", {}))
        # A planted op that encloses another planted one (aten::nan_to_num inside
        # aten::nan_to_num) also grows by the time inserted inside it: its own time by its
        # own plan.
        expected = dict(extra)
        for h, d in plan.get("host_ins", {}).items():
            for h2, d2 in plan.get("host_ins", {}).items():
                if h2 != h and t.key[h2] == t.key[h] and t.ts[h] <= t.ts[h2] and \
                        t.end(h2) <= t.end(h) and h in t.ancestors(h2):
                    expected[h] += d2
        for i, d in expected.items():
            if ndur[i] - t.dur[i] != d:
                fails.append(tag + ": planted event %d got %d ns, planned %d" % (i, ndur[i] - t.dur[i], d))
        longer_calls = {i for i in t.syncs if ndur[i] > t.dur[i]} | set(plan.get("host_ins", {}))
        by_thread = {}
        for i in longer_calls:
            by_thread.setdefault(t.key[i], []).append((t.ts[i], t.end(i)))
        # A pause makes exactly what encloses its point (starts before it, ends at or after
        # it) longer by its time.
        for k, at, d in plan.get("pause_ins", []):
            by_thread.setdefault(k, []).append((at, at))
            for i in t.threads.get(k, []):
                if t.ts[i] < at <= t.end(i) and ndur[i] - t.dur[i] != d:
                    fails.append(tag + ": event %d (%s) encloses a pause of %d ns but grew by %d ns" % (
                        i, t.name(i)[:60], d, ndur[i] - t.dur[i]))
        for lst in by_thread.values():
            lst.sort()

        def encloses_longer_call(i):
            lst = by_thread.get(t.key[i], [])
            j = bisect.bisect_left(lst, (t.ts[i], -1))
            return j < len(lst) and lst[j][1] <= t.end(i)
        waiting = set(plan.get("min_end", {}))
        for i in t.ts:
            if i in extra or ndur[i] == t.dur[i]:
                continue
            kd = t.kind[i]
            if kd in ("gpuann", "gsync"):
                continue
            if kd == "gpu" and i in waiting and ndur[i] > t.dur[i]:
                continue
            if kd == "host" and ndur[i] > t.dur[i] and encloses_longer_call(i):
                continue  # a longer sync or launch call, or a range that encloses one
            fails.append(tag + ": %s event %d (%s) changed duration by %d ns" % (
                kd, i, t.name(i)[:60], ndur[i] - t.dur[i]))
        for i in t.ts:
            if nend[i] - t.end(i) > planted_total:
                fails.append(tag + ": event %d (%s) ends %d ns later, more than the %d ns planted" % (
                    i, t.name(i)[:60], nend[i] - t.end(i), planted_total))
        for k, lst in t.streams.items():
            if k[0] == "ann":
                continue
            prev = None
            run0 = run1 = None
            for g in lst:
                if prev is not None:
                    if nts[g] < nts[prev]:
                        fails.append(tag + ": stream %s reordered at %d" % (k, g))
                    if max(0, run1 - nts[g]) > max(0, run0 - t.ts[g]):
                        fails.append(tag + ": stream %s: event %d overlaps (%d ns > %d ns)" % (
                            k, g, run1 - nts[g], max(0, run0 - t.ts[g])))
                run0 = t.end(g) if run0 is None else max(run0, t.end(g))
                run1 = nend[g] if run1 is None else max(run1, nend[g])
                prev = g
        for c, p in t.parent.items():
            if not (nts[p] <= nts[c] and nend[c] <= nend[p]):
                fails.append(tag + ": event %d no longer inside its parent %d" % (c, p))
        for h in t.launches:
            for g in t.gpu_of_launch(h):
                if nend[h] != t.end(h) and nts[g] < nend[h] + min(t.ts[g] - t.end(h), 0):
                    fails.append(tag + ": kernel %d starts before its launch %d returned" % (g, h))
        # GPU work that had completed when a sync call returned must still complete
        # before it returns (an event sync: the work that completed while it waited).
        prefix = {}
        for k, (ends, idx) in t.stream_ends.items():
            m, acc = None, []
            for g in idx:
                m = nend[g] if m is None else max(m, nend[g])
                acc.append(m)
            prefix[k] = acc
        for s in t.syncs:
            keys = [t.sync_stream[s]] if t.sync_stream.get(s) else list(t.stream_ends)
            for k in keys:
                ends, idx = t.stream_ends[k]
                lo, hi = bisect.bisect_right(ends, t.ts[s]), bisect.bisect_right(ends, t.end(s))
                if "EventSynchronize" in t.name(s):
                    late = max((nend[g] for g in idx[lo:hi]), default=None)
                else:
                    late = prefix[k][hi - 1] if hi else None
                if late is not None and late > nend[s]:
                    fails.append(tag + ": sync %d (%s) returns before GPU work it waited for" % (s, t.name(s)))
                for g in idx[lo:hi]:  # it waited for these: it still returns as long after
                    if nend[s] - nend[g] < t.end(s) - t.end(g):
                        fails.append(tag + ": sync %d (%s) returns %d ns sooner after GPU event %d" % (
                            s, t.name(s), t.end(s) - t.end(g) - nend[s] + nend[g], g))
        case.setdefault("_check", []).append(
            sum(1 for i in t.ts if nts[i] != t.ts[i] or nend[i] != t.end(i)))
    return fails


# ---------------------------------------------------------------------- main
def summarize(rows):
    groups = {}
    for r in rows:
        groups.setdefault((r["cls"], r["param"]), []).append(r)
    print("\n%-10s %-8s %5s  %-20s %-20s" % ("class", "param", "cases", "found (self / base)",
                                              "untouched (self / base)"))
    tot = {}
    for (cls, param), lst in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        n = len(lst)
        f = [sum(r[m]["hit"] for r in lst) for m in ("self", "baseline")]
        u = [sum(r[m]["untouched"] for r in lst) for m in ("self", "baseline")]
        unit = "x" if cls in ("kernel", "copy", "throttle", "link", "gpu", "cpu") else "%" if cls == "pause" else "+us "
        print("%-10s %-8s %5d  %5.1f%% / %5.1f%%     %5.1f%% / %5.1f%%" % (
            cls, "%s%g" % (unit, param), n, 100 * f[0] / n, 100 * f[1] / n, 100 * u[0] / n, 100 * u[1] / n))
        t = tot.setdefault(cls, [0, 0, 0, 0, 0])
        t[0] += n
        for j in range(2):
            t[1 + j] += f[j]
            t[3 + j] += u[j]
    n = sum(t[0] for t in tot.values())
    if n:
        uu = [sum(t[3 + j] for t in tot.values()) for j in range(2)]
        print("%-10s %-8s %5d  %-20s %5.1f%% / %5.1f%%" % ("all", "", n, "", 100 * uu[0] / n, 100 * uu[1] / n))
    k2 = [r for r in rows if r["cls"] == "kernel" and r["param"] >= 2]
    if k2:
        print("kernel >= x2: self %.1f%%, baseline %.1f%% of %d" % (
            100 * sum(r["self"]["hit"] for r in k2) / len(k2),
            100 * sum(r["baseline"]["hit"] for r in k2) / len(k2), len(k2)))
    la = [r for r in rows if r["cls"] == "launch"]
    for label, group, texts in (
            ("kernel >= x2", k2, ("separable from the family's natural variation",
                                  "within it (over half of a launch shape slowed, or under its "
                                  "95th percentile)")),
            ("launch", la, ("some slowed call relaunches a kernel",
                            "every slowed call is its kernel's first launch (module loading)"))):
        for sep, text in zip((True, False), texts):
            part = [r for r in group if r.get("separable") == sep]
            if part:
                print("%s, %s: self %.1f%%, baseline %.1f%% of %d" % (
                    label, text, 100 * sum(r["self"]["hit"] for r in part) / len(part),
                    100 * sum(r["baseline"]["hit"] for r in part) / len(part), len(part)))
    for w in C.KERNEL_WINDOWS:
        kw = [r for r in rows if r["cls"] == "kernel" and r["window"] == w]
        if kw:
            print("kernel window %-3d: self %.1f%%, baseline %.1f%% of %d" % (
                w, 100 * sum(r["self"]["hit"] for r in kw) / len(kw),
                100 * sum(r["baseline"]["hit"] for r in kw) / len(kw), len(kw)))
    for back in (True, False):
        kb = [r for r in rows if r["cls"] == "kernel" and r["param"] >= 2 and r["backward"] == back]
        if kb:
            print("kernel >= x2, %s families: self %.1f%%, baseline %.1f%% of %d" % (
                "backward-launched" if back else "other", 100 * sum(r["self"]["hit"] for r in kb) / len(kb),
                100 * sum(r["baseline"]["hit"] for r in kb) / len(kb), len(kb)))
    st = [r for r in rows if r["cls"] == "straggler"]
    if st:
        print("straggler, its delayed compute named first: self %.1f%%, baseline %.1f%% of %d" % (
            100 * sum(r["self"].get("hit_compute", False) for r in st) / len(st),
            100 * sum(r["baseline"].get("hit_compute", False) for r in st) / len(st), len(st)))
    print_cost_and_errors(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_args(ap, "traces")
    ap.add_argument("--quick", action="store_true", help="a small subset of traces and cases")
    ap.add_argument("--class", dest="classes", action="append",
                    help="only cases of these classes, comma-separated or repeated (kernel, launch, "
                         "hostop, straggler, copy, pause, throttle, link, gpu, cpu); "
                         "case ids stay those of the whole run")
    a = ap.parse_args()
    known = ("kernel", "launch", "hostop", "straggler", "copy", "pause", "throttle", "link", "gpu",
             "cpu")
    if a.classes:
        # "--class kernel,launch" and "--class kernel --class launch" alike.
        a.classes = [c for arg in a.classes for c in arg.split(",") if c]
        unknown = [c for c in a.classes if c not in known]
        if unknown:
            sys.exit("unknown class %s (--class takes %s)" % (", ".join(unknown), ", ".join(known)))
    if not a.check and not os.access(a.teller, os.X_OK):
        sys.exit("no teller binary at %s (--teller)" % a.teller)
    tmp = a.keep or tempfile.mkdtemp(prefix="teller-planted-")
    os.makedirs(tmp, exist_ok=True)
    t_start = time.monotonic()
    units = discover(a.data, a.only or (QUICK if a.quick else None))
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.j))
    slots = threading.Semaphore(2 * max(1, a.j))  # bounds the perturbed traces on disk
    futures, rows, n_case, fails, checked = [], [], 0, [], 0

    def release(_):
        slots.release()

    for label, files in units:
        rng = random.Random("%d:%s" % (a.seed, label))
        try:
            unit, cases, skip = gen_cases(label, files, rng, a.quick)
        except (ValueError, KeyError, TypeError) as e:
            print("skip %-70s %s" % (label, "not a Kineto timeline (%s)" % e.__class__.__name__))
            continue
        if skip:
            print("skip %-70s %s" % (label, skip))
            continue
        # Ids are numbered over every class, so that a case keeps its id when filtered.
        for k, c in enumerate(cases):
            c["id"] = "case%04d" % (n_case + k + 1)
        n_case += len(cases)
        if a.classes:
            cases = [c for c in cases if c["cls"] in a.classes]
        counts = {}
        for c in cases:
            counts[c["cls"]] = counts.get(c["cls"], 0) + 1
        print("plant %-69s %s" % (label, ", ".join("%s %d" % kv for kv in sorted(counts.items()))))
        sys.stdout.flush()
        orig = files[0] if len(files) == 1 else os.path.dirname(files[0])
        fails_before = len(fails)
        for c in cases:
            c["trace"] = label
            c["_multi"] = len(files) > 1
            dirpath = os.path.join(tmp, c["id"])
            if a.check:
                plans, _ = build_case(unit, c, files, dirpath)
                f = check_case(unit, files, c, plans, dirpath)
                checked += 1
                fails += f
                if not a.keep:
                    shutil.rmtree(dirpath, ignore_errors=True)
                rows.append(c)
                continue
            slots.acquire()
            build_case(unit, c, files, dirpath)
            fut = pool.submit(run_case, a, c, dirpath, orig)
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
        moved = sum(c["moved_events"] for c in rows)
        syncs = sum(c["sync_longer"] for c in rows)
        print("\ncheck: %d perturbed traces (%s); %d events moved or lengthened, %d sync calls "
              "made longer; %d failures" % (checked, ", ".join("%s %d" % kv for kv in sorted(by.items())),
                                            moved, syncs, len(fails)))
        for f in fails[:30]:
            print("  FAIL " + f)
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)
        sys.exit(1 if fails else 0)
    rows = [f.result() for f in futures]
    for r in rows:
        for k in [k for k in r if k.startswith("_")]:
            del r[k]
        if a.verbose:
            print("%s %-9s %-6s %-8s %-60s self %d base %d" % (
                r["id"], r["cls"], r["param"], r["window"], r["family"][:60], r["self"]["hit"],
                r["baseline"]["hit"]))
    summarize(rows)
    print("%d cases, %d diagnoses, %.0f s wall" % (len(rows), 2 * len(rows), time.monotonic() - t_start))
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"teller": a.teller, "seed": a.seed, "quick": a.quick, "cases": rows}, f, indent=1)
    if not a.keep:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
