"""What the Kineto and the Nsight planted-fault benchmarks share: the host-time shifts of
their timing models, the scaled windows of their cases, and their command line and totals."""
import bisect


def host_shifts(key, insertions):
    """Per thread, the times extra host time is inserted at and the running sums:
    {thread: ([t...], [cumulative ns...])} from (event, extra ns) pairs inserted at each
    event's end (`key` gives an event's thread and its end: key(i) -> (thread, end))."""
    ins = {}
    for h, d in insertions:
        k, end = key(h)
        ins.setdefault(k, []).append((end, d))
    shift = {}
    for k, lst in ins.items():
        lst.sort()
        ts_list, cum, c = [], [], 0
        for t, d in lst:
            c += d
            ts_list.append(t)
            cum.append(c)
        shift[k] = (ts_list, cum)
    return shift


def shifted(shift, k, s, e):
    """An event of thread k from s to e, moved by the host time inserted at or before each
    of its ends."""
    sh = shift.get(k)
    if not sh:
        return s, e
    a = bisect.bisect_right(sh[0], s)
    b = bisect.bisect_right(sh[0], e)
    return s + (sh[1][a - 1] if a else 0), e + (sh[1][b - 1] if b else 0)


def scaled_windows(inst, dur, rng, windows, factors):
    """For each window length shorter than the family, a window of that many consecutive
    instances drawn at random, and for each factor the extra ns of every instance in it:
    yields (window, start, factor, extra) where extra sums above 0."""
    for w in windows:
        if len(inst) <= w:
            continue
        start = rng.randrange(0, len(inst) - w + 1)
        win = inst[start:start + w]
        for f in factors:
            extra = {g: round(dur[g] * f) - dur[g] for g in win}
            if sum(extra.values()) > 0:
                yield w, start, f, extra


def add_common_args(ap, what):
    """The options both benchmarks take; `what` names what they perturb."""
    ap.add_argument("--teller", default="build/bin/teller")
    ap.add_argument("--data", default="../shared/data/real")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--check", action="store_true", help="verify the perturbations, run no teller")
    ap.add_argument("--out", help="per-case rows as JSON")
    ap.add_argument("--keep", help="keep the perturbed %s under this folder" % what)
    ap.add_argument("--only", action="append", help="%s whose name contains this" % what)
    ap.add_argument("--verbose", action="store_true")


def print_cost_and_errors(rows):
    """The diagnoses' time in all, and how many gave no usable report."""
    secs = sum(r[m].get("seconds", 0) for r in rows for m in ("self", "baseline"))
    print("teller diagnose: %.0f s in all" % secs)
    errors = sum(1 for r in rows for m in ("self", "baseline") if "error" in r[m])
    if errors:
        print("diagnoses without a usable report: %d" % errors)
