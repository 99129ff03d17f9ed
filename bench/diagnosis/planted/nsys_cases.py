"""The planted cases for Nsight Systems exports (planted/nsys.py), chosen with a seeded
generator. Same case dicts as cases.py: cls (kernel | launch | copy), param, window,
family, plan (handed to `NsysTrace.solve`: dur_extra / host_ins) and accept (the names
that count as a hit in the top 3 of top_operators).

Families: a kernel family is the kernel name as Teller reads it (the demangled name) and
the launch geometry (grid, block) when the export records it; a copy family is the copy
kind and size.
"""
import re

from .cases import COPY_FACTORS, COPY_WINDOWS, KERNEL_FACTORS, KERNEL_WINDOWS, LAUNCH_US
from .common import scaled_windows
from .trace import is_comm

KERNEL_FAMILIES = 4
MIN_FAMILY = 5  # lower than cases.py (6): the small export has one family of 5 kernels
LAUNCH_FAMILIES = 2  # kernel families whose launch calls get the extra latency
LAUNCH_RANGES = 2  # NVTX range names whose launch calls get it
LAUNCH_WINDOW = 10
COPY_KIND = re.compile(r"Host-to-Device|Device-to-Host|Device-to-Device")


def kernel_families(t):
    fams = {}
    for lst in t.streams.values():
        for g in lst:
            if t.is_kernel(g):
                sig = t.info[g]["signature"]
                fams.setdefault((t.name(g), None if all(v is None for v in sig) else sig), []).append(g)
    for lst in fams.values():
        lst.sort(key=lambda g: (t.ts[g], g))
    return fams


def candidates(fams):
    return sorted((k for k, v in fams.items()
                   if not is_comm(k[0]) and len(v) > min(KERNEL_WINDOWS) and len(v) >= MIN_FAMILY),
                  key=lambda k: (k[0], str(k[1])))


def eligible(t):
    """None when kernel cases can be planted in t, else why not."""
    fams = kernel_families(t)
    if not fams:
        return "no GPU kernels"
    if not candidates(fams):
        return "no compute kernel family with %d+ instances (largest: %d)" % (
            MIN_FAMILY, max(len(v) for v in fams.values()))
    return None


def sig_text(sig):
    if sig is None:
        return None
    return "grid=%s,%s,%s block=%s,%s,%s" % tuple(sig)


def kernel_cases(t, rng, families=KERNEL_FAMILIES):
    fams = kernel_families(t)
    cand = candidates(fams)
    # One family long enough for the widest window, one of the heaviest (GPU time), the
    # rest at random.
    picks = []
    wide = [k for k in cand if len(fams[k]) > max(KERNEL_WINDOWS)]
    if wide:
        picks.append(rng.choice(wide))
    by_time = sorted(cand, key=lambda k: -sum(t.dur[g] for g in fams[k]))
    heavy = [k for k in by_time[:max(1, len(by_time) // 4)] if k not in picks]
    if heavy and len(picks) < families:
        picks.append(rng.choice(heavy))
    rest = [k for k in cand if k not in picks]
    picks += rng.sample(rest, min(families - len(picks), len(rest)))
    same_name = {}
    for n, _ in fams:
        same_name[n] = same_name.get(n, 0) + 1
    out = []
    for key in picks:
        inst = fams[key]
        for w, start, f, extra in scaled_windows(inst, t.dur, rng, KERNEL_WINDOWS, KERNEL_FACTORS):
            out.append({"cls": "kernel", "param": f, "window": w, "family": key[0],
                        "signature": sig_text(key[1]), "instances": len(inst),
                        "name_instances": sum(len(v) for k, v in fams.items() if k[0] == key[0]),
                        "families_same_name": same_name[key[0]], "first": start,
                        "median_ns": sorted(t.dur[g] for g in inst)[len(inst) // 2],
                        "plan": {"dur_extra": extra}, "accept": [key[0]]})
    return out


def launch_cases(t, rng, families=LAUNCH_FAMILIES, ranges=LAUNCH_RANGES):
    """+20/+100 us on each launch call of one kernel family, or on each kernel launch call
    under one NVTX range name (the innermost range enclosing the call): all of them, and
    a window of 10 consecutive ones."""
    fams = kernel_families(t)
    groups = []
    cand = [k for k in candidates(fams) if all(t.launch_of(g) is not None for g in fams[k])]
    for key in rng.sample(cand, min(families, len(cand))):
        calls = [t.launch_of(g) for g in fams[key]]
        groups.append(("kernel_family", key[0], sig_text(key[1]), [[h] for h in calls]))
    by_range = {}
    for h in t.launchers:
        if not any(t.is_kernel(g) for g in t.gpu_of_launch(h)):
            continue
        rs = t.nvtx_ranges_of(h)
        if rs:
            by_range.setdefault(t.name(rs[0]), {}).setdefault(rs[0], []).append(h)
    rnames = sorted(by_range)
    for n in rng.sample(rnames, min(ranges, len(rnames))):
        inst = sorted(by_range[n], key=lambda a: t.ts[a])
        groups.append(("nvtx_range", n, None, [by_range[n][a] for a in inst]))
    out = []
    for how, n, sig, inst in groups:
        variants = [("all", inst)]
        if len(inst) > LAUNCH_WINDOW:
            s = rng.randrange(0, len(inst) - LAUNCH_WINDOW + 1)
            variants.append(("window%d" % LAUNCH_WINDOW, inst[s:s + LAUNCH_WINDOW]))
        for label, chosen in variants:
            calls = sorted(h for c in chosen for h in c)
            apis = sorted({t.name(h) for h in calls})
            rnames_enc = sorted({t.name(a) for h in calls for a in t.nvtx_ranges_of(h)})
            for us in LAUNCH_US:
                out.append({"cls": "launch", "param": us, "window": label, "family": n,
                            "group": how, "signature": sig, "instances": len(inst),
                            "launch_calls": len(calls), "apis": apis,
                            "plan": {"host_ins": {h: us * 1000 for h in calls}},
                            "accept": sorted(set(apis) | set(rnames_enc) |
                                             ({n} if how == "nvtx_range" else set()))})
    return out


def copy_cases(t, rng):
    fams = {}
    for lst in t.streams.values():
        for g in lst:
            if t.is_memcpy(g) and COPY_KIND.search(t.name(g)):
                fams.setdefault((t.name(g), t.info[g]["bytes"]), []).append(g)
    cand = sorted((k for k, v in fams.items() if len(v) > min(COPY_WINDOWS)),
                  key=lambda k: (k[0], str(k[1])))
    if not cand:
        return []
    wide = [k for k in cand if len(fams[k]) > max(COPY_WINDOWS)]  # room for every window
    n = rng.choice(wide or cand)
    inst = sorted(fams[n], key=lambda g: t.ts[g])
    out = []
    for w, _, f, extra in scaled_windows(inst, t.dur, rng, COPY_WINDOWS, COPY_FACTORS):
        out.append({"cls": "copy", "param": f, "window": w, "family": n[0], "bytes": n[1],
                    "instances": len(inst),
                    "name_instances": sum(len(v) for k, v in fams.items() if k[0] == n[0]),
                    "plan": {"dur_extra": extra}, "accept": [n[0]]})
    return out
