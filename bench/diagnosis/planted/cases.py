"""The planted cases: which events get which extra time, chosen with a seeded generator.

A case is a dict: cls (kernel | launch | hostop | straggler | copy | link | pause | throttle |
gpu), param (factor or extra us),
window, family, the file it is planted in and, per planted file, the plan handed to
`Trace.solve`: dur_extra / host_ins / min_start / min_end.
"""
import re

from .common import scaled_windows
from .trace import is_comm

KERNEL_FACTORS = (1.3, 1.5, 2.0, 4.0)
KERNEL_WINDOWS = (3, 10, 30)
KERNEL_FAMILIES = 3
MIN_FAMILY = 6  # a family with fewer instances has no peers to speak of
LAUNCH_US = (20, 100)
LAUNCH_FAMILIES = 2
LAUNCH_WINDOW = 10
HOSTOP_US = (50, 200)
HOSTOP_FAMILIES = 2
HOSTOP_WINDOW = 10
STRAGGLER_US = (200, 1000)
STRAGGLER_COLLECTIVES = 3
LINK_FACTORS = (2.0, 4.0)
LINK_WINDOWS = (1, 3)
LINK_COLLECTIVES = 2
THROTTLE_FACTORS = (1.3, 1.6)
GPU_FACTORS = (1.3, 1.6)
CPU_FACTORS = (1.3, 2.0)
CPU_RANKS = 3
GPU_RANKS = 3
PAUSE_PERCENT = (5, 25)
PAUSE_STEPS = 2
STEP_RANGE = re.compile(r"ProfilerStep#\d+$")
COPY_FACTORS = (2.0, 4.0)
COPY_WINDOWS = (3, 10)
COPY_KIND = re.compile(r"HtoD|DtoH|DtoD")
BACKWARD = re.compile(r"autograd::engine|Backward", re.I)


def kernel_families(t):
    fams = {}
    for k, lst in t.streams.items():
        if k[0] == "ann":
            continue
        for g in lst:
            if t.events[g].get("cat", "").lower() == "kernel":
                fams.setdefault(t.name(g), []).append(g)
    for lst in fams.values():
        lst.sort(key=lambda g: (t.ts[g], g))
    return fams


def is_backward(t, g):
    h = t.launch_of(g)
    if h is None:
        return False
    return any(BACKWARD.search(t.name(a)) for a in t.ancestors(h))


def eligible(t):
    """None when kernel cases can be planted in t, else why not."""
    fams = kernel_families(t)
    if not fams:
        return "no GPU kernels"
    best = max(len(v) for v in fams.values())
    if not any(len(v) > min(KERNEL_WINDOWS) and len(v) >= MIN_FAMILY and not is_comm(n)
               for n, v in fams.items()):
        return "no compute kernel family with %d+ instances (largest: %d)" % (MIN_FAMILY, best)
    return None


def launch_shape(t, g):
    """What the trace records of a kernel's launch configuration: (grid, block)."""
    a = t.events[g].get("args") or {}
    return (str(a.get("grid")), str(a.get("block")))


def separable(t, inst, extra):
    """Whether a plant stands out of the family's natural variation at all, so that a
    self-fit diagnosis could tell it: per launch configuration, the slowed instances are at
    most half of theirs, and their median new time is above the 95th percentile of the
    untouched ones by more than the trace's resolution (1 us when it writes whole
    microseconds: a 1 us kernel written as 2 us may have taken 1.49 and 1.50 us). (A
    report, not a target: the score counts every case.)"""
    tick = 1000 if all(t.int_dur[g] for g in inst) else 0
    groups = {}
    for g in inst:
        groups.setdefault(launch_shape(t, g), []).append(g)
    for shape, lst in groups.items():
        slowed = [g for g in lst if extra.get(g, 0) > 0]
        if not slowed:
            continue
        rest = sorted(t.dur[g] for g in lst if extra.get(g, 0) <= 0)
        if len(rest) < len(slowed):
            return False
        new = sorted(t.dur[g] + extra[g] for g in slowed)
        if new[len(new) // 2] - rest[min(len(rest) - 1, (95 * len(rest)) // 100)] <= tick:
            return False
    return True


def kernel_cases(t, rng, families=KERNEL_FAMILIES):
    fams = kernel_families(t)
    cand = sorted(n for n, v in fams.items()
                  if not is_comm(n) and len(v) > min(KERNEL_WINDOWS) and len(v) >= MIN_FAMILY)
    back = [n for n in cand if 2 * sum(is_backward(t, g) for g in fams[n]) >= len(fams[n])]
    picks = []
    if back:
        picks.append(rng.choice(back))
    rest = [n for n in cand if n not in picks]
    picks += rng.sample(rest, min(families - len(picks), len(rest)))
    out = []
    for n in picks:
        inst = fams[n]
        for w, start, f, extra in scaled_windows(inst, t.dur, rng, KERNEL_WINDOWS, KERNEL_FACTORS):
            out.append({"cls": "kernel", "param": f, "window": w, "family": n,
                        "backward": n in back, "instances": len(inst), "first": start,
                        "separable": separable(t, inst, extra),
                        "plan": {"dur_extra": extra}, "accept": [n]})
    return out


def all_and_window(inst, rng, window):
    """[("all", every instance)] and, when there are more than `window`, a window of that
    many consecutive instances drawn at random."""
    variants = [("all", inst)]
    if len(inst) > window:
        s = rng.randrange(0, len(inst) - window + 1)
        variants.append(("window%d" % window, inst[s:s + window]))
    return variants


def relaunched(t, calls):
    """Whether some of the slowed launch calls launch only kernels their process had
    launched before: a kernel's first launch loads its module, so a slow first launch is
    what a healthy program does once, and only a baseline tells a planted one from it.
    (A report, not a target: the score counts every case.)"""
    first = {}
    for h in t.launches:
        for g in t.gpu_of_launch(h):
            k = (t.events[h].get("pid"), t.name(g))
            first[k] = min(first.get(k, t.ts[h]), t.ts[h])
    for h in calls:
        ks = t.gpu_of_launch(h)
        if ks and all(first[(t.events[h].get("pid"), t.name(g))] < t.ts[h] for g in ks):
            return True
    return False


def launch_cases(t, rng, families=LAUNCH_FAMILIES):
    """+20/+100 us on each launch call under one cpu_op family (the innermost cpu_op
    enclosing the call): all its instances, and a window of 10 consecutive ones."""
    ops = {}
    for h in t.launches:
        if not t.gpu_of_launch(h):
            continue
        for a in t.ancestors(h):
            if t.events[a].get("cat", "").lower() in ("cpu_op", "operator"):
                ops.setdefault(t.name(a), {}).setdefault(a, []).append(h)
                break
    cand = sorted(ops)
    picks = rng.sample(cand, min(families, len(cand)))
    out = []
    for n in picks:
        inst = sorted(ops[n], key=lambda a: t.ts[a])
        for label, chosen in all_and_window(inst, rng, LAUNCH_WINDOW):
            calls = [h for a in chosen for h in ops[n][a]]
            apis = sorted({t.name(h) for h in calls})
            for us in LAUNCH_US:
                out.append({"cls": "launch", "param": us, "window": label, "family": n,
                            "instances": len(inst), "launch_calls": len(calls),
                            "separable": relaunched(t, calls),
                            "plan": {"host_ins": {h: us * 1000 for h in calls}},
                            "accept": [n] + apis})
    return out


def copy_cases(t, rng):
    fams = {}
    for k, lst in t.streams.items():
        if k[0] == "ann":
            continue
        for g in lst:
            if t.events[g].get("cat", "").lower() in ("gpu_memcpy", "memcpy") and \
                    COPY_KIND.search(t.name(g)):
                b = (t.events[g].get("args") or {}).get("bytes")
                fams.setdefault((t.name(g), b), []).append(g)
    cand = sorted((k for k, v in fams.items() if len(v) > min(COPY_WINDOWS)),
                  key=lambda k: (k[0], str(k[1])))
    if not cand:
        return []
    n = rng.choice(cand)
    inst = sorted(fams[n], key=lambda g: t.ts[g])
    out = []
    for w, _, f, extra in scaled_windows(inst, t.dur, rng, COPY_WINDOWS, COPY_FACTORS):
        out.append({"cls": "copy", "param": f, "window": w, "family": n[0], "bytes": n[1],
                    "instances": len(inst), "plan": {"dur_extra": extra}, "accept": [n[0]]})
    return out


def comm_kernels(t):
    """Comm kernels of a rank keyed (name, ordinal among that rank's kernels of the name)."""
    out, seen = {}, {}
    fams = kernel_families(t)
    allk = sorted((g for n, v in fams.items() if is_comm(n) for g in v), key=lambda g: t.ts[g])
    for g in allk:
        n = t.name(g)
        out[(n, seen.get(n, 0))] = g
        seen[n] = seen.get(n, 0) + 1
    return out


def straggler_cases(ranks, rng, ranks_tried=None, collectives=STRAGGLER_COLLECTIVES):
    """ranks: [Trace] in rank order. One rank's compute before a collective gets
    +200/+1000 us; the other ranks' matching collective kernels wait for it."""
    comms = [comm_kernels(t) for t in ranks]
    common = sorted(set.intersection(*(set(c) for c in comms)))
    chosen = rng.sample(common, min(collectives, len(common)))
    out = []
    for r in (ranks_tried if ranks_tried is not None else range(len(ranks))):
        t = ranks[r]
        for ck in chosen:
            c = comms[r][ck]
            k = t.key[c]
            comp = None
            for g in t.streams[k]:
                if t.end(g) <= t.ts[c] and not is_comm(t.name(g)) and \
                        t.events[g].get("cat", "").lower() == "kernel":
                    comp = g
            same_stream = comp is not None
            if comp is None:
                best = None
                for kk, lst in t.streams.items():
                    if kk[0] == "ann":
                        continue
                    for g in lst:
                        if t.events[g].get("cat", "").lower() == "kernel" and \
                                not is_comm(t.name(g)) and t.end(g) <= t.ts[c]:
                            if best is None or t.end(g) > t.end(best):
                                best = g
                comp = best
            if comp is None:
                continue
            for us in STRAGGLER_US:
                plan = {"dur_extra": {comp: us * 1000}}
                if not same_stream:
                    # The collective was enqueued behind the compute (an event wait on
                    # its stream): it starts that much later.
                    plan["min_start"] = {c: t.ts[c] + us * 1000}
                out.append({"cls": "straggler", "param": us, "window": "-", "rank": r,
                            "rank_id": t.rank if t.rank is not None else r,
                            "family": t.name(comp), "collective": ck[0], "ordinal": ck[1],
                            "same_stream": same_stream, "plan": plan, "coll": c,
                            "coll_by_rank": [cm[ck] for cm in comms], "accept": [t.name(comp)]})
    return out


def link_cases(ranks, rng, collectives=LINK_COLLECTIVES):
    """ranks: [Trace] in rank order. One collective's own transfer time (after its last rank
    arrives) x2/x4 on every rank, on 1 and 3 consecutive instances of it: a slower link or
    a fallback transport. Returns cases with "scale": {collective key: factor}, which
    solve_collectives turns into plans."""
    comms = [comm_kernels(t) for t in ranks]
    common = sorted(set.intersection(*(set(c) for c in comms)))
    by_name = {}
    for ck in common:
        by_name.setdefault(ck[0], []).append(ck)
    names = sorted(n for n, lst in by_name.items() if len(lst) >= max(LINK_WINDOWS))
    out = []
    for n in rng.sample(names, min(collectives, len(names))):
        lst = sorted(by_name[n], key=lambda ck: ck[1])
        for w in LINK_WINDOWS:
            s = rng.randrange(0, len(lst) - w + 1)
            for f in LINK_FACTORS:
                out.append({"cls": "link", "param": f, "window": w, "family": n,
                            "instances": len(lst), "first": s,
                            "scale": {ck: f for ck in lst[s:s + w]}, "accept": [n]})
    return out


def hostop_cases(t, rng, families=HOSTOP_FAMILIES):
    """+50/+200 us of the host's own time in each instance of one cpu_op family (time spent
    in the operator itself, Python or framework overhead, before it returns; what it
    launches is launched on time): all its instances, and a window of 10 consecutive ones.
    Families of at least MIN_FAMILY instances on host threads, none of them zero-length."""
    ops = {}
    for i, kd in t.kind.items():
        if kd == "host" and t.events[i].get("cat", "").lower() in ("cpu_op", "operator"):
            ops.setdefault(t.name(i), []).append(i)
    # Time inserted at the end of an instant (a zero-length op) moves it whole: its own time
    # cannot grow, so such families are not drawn.
    ops = {n: inst for n, inst in ops.items() if all(t.dur[i] > 0 for i in inst)}
    cand = sorted(n for n, inst in ops.items() if len(inst) >= MIN_FAMILY)
    picks = rng.sample(cand, min(families, len(cand)))
    out = []
    for n in picks:
        inst = sorted(ops[n], key=lambda a: t.ts[a])
        for label, chosen in all_and_window(inst, rng, HOSTOP_WINDOW):
            for us in HOSTOP_US:
                out.append({"cls": "hostop", "param": us, "window": label, "family": n,
                            "instances": len(inst),
                            "plan": {"host_ins": {a: us * 1000 for a in chosen}},
                            "accept": [n]})
    return out


def profiler_steps(t):
    """The ProfilerStep#N ranges of the thread that has the most, in time order, and that
    thread's key; ([], None) when there are none."""
    by_thread = {}
    for i, kd in t.kind.items():
        if kd == "host" and STEP_RANGE.match(t.name(i)):
            by_thread.setdefault(t.key[i], []).append(i)
    if not by_thread:
        return [], None
    key, steps = max(by_thread.items(), key=lambda kv: len(kv[1]))
    return sorted(steps, key=lambda i: t.ts[i]), key


def throttle_cases(t, rng):
    """The GPU itself is slower for one step (clocks lowered by power or heat, another
    process on the device): every kernel the step launches (its launch call inside the
    step range, on any thread) takes x1.3 / x1.6, its streams pushed back. One step drawn
    after the first, in traces with 3+ ProfilerStep#N ranges. Scored by an abnormal step
    whose fault type is runtime_driver (the category of "the GPU itself is slower")."""
    steps, _ = profiler_steps(t)
    if len(steps) < 3:
        return []
    st = rng.choice(steps[1:])
    lo, hi = t.ts[st], t.end(st)
    kernels = []
    for k, lst in t.streams.items():
        if k[0] == "ann":
            continue
        for g in lst:
            if t.events[g].get("cat", "").lower() != "kernel" or is_comm(t.name(g)):
                continue
            h = t.launch_of(g)
            if h is not None and lo <= t.ts[h] < hi:
                kernels.append(g)
    if not kernels:
        return []
    out = []
    for f in THROTTLE_FACTORS:
        out.append({"cls": "throttle", "param": f, "window": t.name(st), "family": t.name(st),
                    "instances": len(kernels),
                    "plan": {"dur_extra": {g: round(t.dur[g] * f) - t.dur[g] for g in kernels}},
                    "accept": ["runtime_driver"]})
    return out


def pause_cases(t, rng, steps_drawn=PAUSE_STEPS):
    """The host thread of a step pauses between two of the step's operations, outside all of
    them (a garbage collection, the process descheduled, untraced work): 5% and 25% of the
    median step's length, in steps drawn after the first (which holds one-time costs). The
    step range and what encloses the point grow; what follows on the thread moves, and the
    GPU work it launches starts no earlier than its launch. Traces with 3+ ProfilerStep#N
    ranges on one thread; the point is the start of a top-level operation of the step that
    begins after the previous one ended."""
    steps, key = profiler_steps(t)
    if len(steps) < 3:
        return []
    durs = sorted(t.dur[i] for i in steps)
    median = durs[len(durs) // 2]
    kids = {}
    for h in t.threads.get(key, []):
        p = t.parent.get(h)
        if p in steps:
            kids.setdefault(p, []).append(h)
    points = []
    for st in steps[1:]:
        lst = sorted(kids.get(st, []), key=lambda h: t.ts[h])
        gaps = [b for a, b in zip(lst, lst[1:]) if t.ts[b] > t.end(a)]
        if gaps:
            points.append((st, gaps))
    out = []
    for st, gaps in rng.sample(points, min(steps_drawn, len(points))):
        b = rng.choice(gaps)
        for pct in PAUSE_PERCENT:
            out.append({"cls": "pause", "param": pct, "window": t.name(st), "family": t.name(st),
                        "instances": len(steps),
                        "plan": {"pause_ins": [(key, t.ts[b], round(median * pct / 100))]},
                        "accept": [t.name(st)]})
    return out


def gpu_cases(ranks, rng, drawn=GPU_RANKS):
    """ranks: [Trace] in rank order. One rank's GPU is slower (clocks lowered, a degraded
    device): every compute kernel of that rank x1.3 / x1.6, its streams pushed back; the
    collectives are solved again by the caller (the others wait for it where it now
    arrives last). Scored by a slow-GPU finding or an abnormal runtime_driver step naming
    the rank."""
    out = []
    for r in sorted(rng.sample(range(len(ranks)), min(drawn, len(ranks)))):
        t = ranks[r]
        kernels = [g for k, lst in t.streams.items() if k[0] != "ann" for g in lst
                   if t.events[g].get("cat", "").lower() == "kernel" and not is_comm(t.name(g))]
        if not kernels:
            continue
        for f in GPU_FACTORS:
            out.append({"cls": "gpu", "param": f, "window": "-", "rank": r,
                        "rank_id": t.rank if t.rank is not None else r,
                        "family": "rank %d" % (t.rank if t.rank is not None else r),
                        "instances": len(kernels),
                        "plan": {"dur_extra": {g: round(t.dur[g] * f) - t.dur[g] for g in kernels}},
                        "accept": ["runtime_driver"]})
    return out


def cpu_cases(t, rng):
    """The host itself is slower for one step (CPU contention: other processes or threads
    on its cores, a throttled CPU): every host event of the process that lies inside the
    step's window (operators, Python functions, runtime calls, on any thread; not the step
    range itself) gets its own time, its duration less its children's, x1.3 / x2, inserted
    at its end; what follows on each thread moves, and GPU work starts no earlier than its
    launch. One step drawn after the first, in traces with 3+ ProfilerStep#N ranges. Scored
    by a slow_host finding in that step or an abnormal step of category scheduling_software
    there (the category of a host that is slower)."""
    steps, _ = profiler_steps(t)
    if len(steps) < 3:
        return []
    st = rng.choice(steps[1:])
    lo, hi = t.ts[st], t.end(st)
    own = host_own_times(t, lambda i: i != st and lo <= t.ts[i] and t.end(i) <= hi)
    out = []
    for f in CPU_FACTORS:
        ins = {i: round(x * (f - 1)) for i, x in own.items() if round(x * (f - 1)) > 0}
        if not ins:
            continue
        out.append({"cls": "cpu", "param": f, "window": t.name(st), "family": t.name(st),
                    "instances": len(ins), "plan": {"host_ins": ins},
                    "accept": ["scheduling_software"]})
    return out


def host_own_times(t, keep):
    """{host event: its own time (duration less its children's)} for the events keep(i)
    accepts, on every thread."""
    kids = {}
    for i, p in t.parent.items():
        kids.setdefault(p, []).append(i)
    return {i: t.dur[i] - sum(t.dur[c] for c in kids.get(i, []))
            for lst in t.threads.values() for i in lst if keep(i)}


def cpu_rank_cases(ranks, rng, drawn=CPU_RANKS):
    """ranks: [Trace] in rank order. One rank's host is slower (CPU contention on its
    node): every host event of that rank gets its own time x1.3 / x2, as in cpu_cases but
    over the whole trace; the collectives are solved again by the caller (the others wait
    for it where it now arrives last). Scored by a slow_host finding on the rank, or an
    abnormal scheduling_software step whose first root evidence is on it."""
    out = []
    for r in sorted(rng.sample(range(len(ranks)), min(drawn, len(ranks)))):
        t = ranks[r]
        own = host_own_times(t, lambda i: True)
        for f in CPU_FACTORS:
            ins = {i: round(x * (f - 1)) for i, x in own.items() if round(x * (f - 1)) > 0}
            if not ins:
                continue
            out.append({"cls": "cpu", "param": f, "window": "-", "rank": r,
                        "rank_id": t.rank if t.rank is not None else r,
                        "family": "rank %d" % (t.rank if t.rank is not None else r),
                        "instances": len(ins), "plan": {"host_ins": ins},
                        "accept": ["scheduling_software"]})
    return out
