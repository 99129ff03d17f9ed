"""A Kineto trace file read and written without losing a digit, and the timing model that
plants a fault in it.

Numbers: Kineto writes "ts"/"dur" in microseconds, often with three decimals on an epoch
of 1.7e15 us, which a double cannot hold. Floats are therefore read as their text (a
sentinel string, see `_FLOAT`), times are converted to integer nanoseconds from that text
and written back as decimal text, so every number the plant does not change is written
byte for byte as it was read. ("displayTimeUnit" only changes how viewers display time;
"ts"/"dur" are microseconds whatever it says.)

Timing model (`Trace.solve`), all in integer ns on the original timeline:
- GPU queues: the events of one (pid, tid) GPU stream stay serial. An event starts at the
  latest of its own start, its lower bound (launch moved, wait for another stream) and the
  end of the events before it (their original overlap, if any, is kept, never increased).
- Host threads: extra time inserted at a point t of a thread (a launch call made longer, a
  synchronization that waits longer) moves every later event of the thread by that amount
  and lengthens every event that spans t (the call itself and the ranges that enclose it).
- Launch: a kernel launched by a call that now ends later starts no earlier than the new
  end (minus the original head start, when it started before its call returned).
- Synchronization: a host sync call (cuda/hip Stream/Device/Event Synchronize, blocking
  cudaMemcpy) that was waiting for GPU work which now ends later returns that much later.
  Its extra time is again an insertion on its host thread, which can move launches and so
  kernels: the model is iterated to a fixed point.
- GPU-side ranges (gpu_user_annotation) span their events; cuda_sync markers follow their
  host call; flow and instant events move with the event they are anchored on.
"""
import bisect
import gzip
import json
import re

from .common import host_shifts, shifted

_FLOAT = "\x00F"  # prefix of a float kept as its text
_FLOAT_OUT = re.compile(r'"\\u0000F([^"]*)"')

GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset"}
RUNTIME_CATS = {"cuda_runtime", "cuda_driver", "runtime"}
COMM_RE = re.compile(
    r"nccl|rccl|all_?reduce|all_?gather|all_?to_?all|reduce_?scatter|sendrecv|multimem|"
    r"broadcast", re.I)
LAUNCH_RE = re.compile(r"LaunchKernel|LaunchCooperativeKernel|GraphLaunch|ModuleLaunch", re.I)
SYNC_RE = re.compile(r"(Stream|Device|Event|Context|Ctx)Synchronize$")
BLOCKING_COPY_RE = re.compile(r"^(cuda|hip|cu)Memcpy(2D|3D|DtoH|HtoD|DtoD)?(_v2)?$")


def _parse_float(text):
    return _FLOAT + text


def micros_to_ns(v):
    """Kineto microseconds (int, or float text) to integer ns, as teller reads them."""
    if isinstance(v, bool):
        raise ValueError("bool time")
    if isinstance(v, int):
        return v * 1000
    if isinstance(v, str) and v.startswith(_FLOAT):
        s = v[len(_FLOAT):]
        if "e" in s or "E" in s:
            return round(float(s) * 1000)
        neg = s.startswith("-")
        if neg:
            s = s[1:]
        whole, _, frac = s.partition(".")
        ns = int(whole or "0") * 1000 + int((frac[:3] + "000")[:3])
        if len(frac) > 3 and frac[3] >= "5":
            ns += 1
        return -ns if neg else ns
    raise ValueError("not a time: %r" % (v,))


def ns_to_micros(ns, was_int):
    """Integer ns to the value written: an int when the original was an int and the value
    is whole microseconds, else decimal text with up to three decimals."""
    if ns % 1000 == 0 and was_int:
        return ns // 1000
    sign = "-" if ns < 0 else ""
    a = abs(ns)
    text = "%s%d.%03d" % (sign, a // 1000, a % 1000)
    text = text.rstrip("0")
    if text.endswith("."):
        text += "0"
    return _FLOAT + text


def dumps(obj):
    return _FLOAT_OUT.sub(r"\1", json.dumps(obj, ensure_ascii=False))


_TS = re.compile(r'"ts"\s*:\s*(-?[0-9][0-9.eE+-]*)')
_DUR = re.compile(r'"dur"\s*:\s*(-?[0-9][0-9.eE+-]*)')


def read_text(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return f.read()


def load_json(path):
    return json.loads(read_text(path), parse_float=_parse_float)


def load_with_texts(path):
    """(top, events, texts): the document, its trace events and each event's source text,
    so that events the plant does not change are written back byte for byte."""
    text = read_text(path)
    dec = json.JSONDecoder(parse_float=_parse_float)

    n = len(text)

    def ws(i):
        while i < n and text[i] in " \t\n\r":
            i += 1
        return i

    def array(i):
        events, texts = [], []
        i = ws(i + 1)
        if text[i] == "]":
            return events, texts, i + 1
        while True:
            obj, j = dec.raw_decode(text, i)
            events.append(obj)
            texts.append(text[i:j])
            i = ws(j)
            if text[i] == "]":
                return events, texts, i + 1
            if text[i] != ",":
                raise ValueError("bad array at %d" % i)
            i = ws(i + 1)

    i = ws(0)
    if text[i] == "[":
        events, texts, i = array(i)
        if text[ws(i):]:
            raise ValueError("data after the document")
        return events, events, texts
    if text[i] != "{":
        raise ValueError("not a JSON object")
    top, events, texts = {}, None, None
    i = ws(i + 1)
    while i < n and text[i] != "}":
        key, i = dec.raw_decode(text, i)
        i = ws(i)
        if text[i] != ":":
            raise ValueError("bad object at %d" % i)
        i = ws(i + 1)
        if key == "traceEvents" and text[i] == "[" and events is None:
            events, texts, i = array(i)
            top[key] = events
        else:
            top[key], i = dec.raw_decode(text, i)
        i = ws(i)
        if text[i] == ",":
            i = ws(i + 1)
    if events is None:
        raise KeyError("traceEvents")
    if text[ws(i + 1):]:
        raise ValueError("data after the document")
    return top, events, texts


def _retime(text, ev, field, value):
    """An event's text with one top-level time field replaced (its text is reused so that
    everything else stays as written); falls back to re-encoding when ambiguous."""
    pat = _TS if field == "ts" else _DUR
    if len(pat.findall(text)) == 1:
        v = value[len(_FLOAT):] if isinstance(value, str) else str(value)
        m = pat.search(text)
        return text[:m.start(1)] + v + text[m.end(1):]
    e = json.loads(text, parse_float=_parse_float)
    e[field] = value
    return dumps(e)


def cat_of(e):
    c = e.get("cat")
    return c.lower() if isinstance(c, str) else ""


def is_comm(name):
    return bool(COMM_RE.search(name))


class Trace:
    """One Kineto file, indexed for planting."""

    def __init__(self, path):
        self.path = path
        self.top, self.events, self.texts = load_with_texts(path)
        ev = self.events
        self.rank = None
        if isinstance(self.top, dict) and isinstance(self.top.get("distributedInfo"), dict):
            self.rank = self.top["distributedInfo"].get("rank")
        self.ts, self.dur, self.int_ts, self.int_dur = {}, {}, {}, {}
        self.kind = {}  # X event index -> gpu | gpuann | gsync | host
        self.streams, self.threads = {}, {}
        self.corr_host, self.corr_gpu = {}, {}
        self.launches, self.syncs = [], []
        for i, e in enumerate(ev):
            if not isinstance(e, dict) or e.get("ph") != "X" or "ts" not in e or "dur" not in e:
                continue
            try:
                ts, dur = micros_to_ns(e["ts"]), micros_to_ns(e["dur"])
            except ValueError:
                continue
            if dur < 0:
                continue
            c = cat_of(e)
            if c == "trace":
                continue  # the profiler's own span; not a thread's timeline
            self.ts[i], self.dur[i] = ts, dur
            self.int_ts[i], self.int_dur[i] = isinstance(e["ts"], int), isinstance(e["dur"], int)
            key = (_hashable(e.get("pid")), _hashable(e.get("tid")))
            args = e.get("args") if isinstance(e.get("args"), dict) else {}
            corr = args.get("correlation")
            if c in GPU_CATS:
                self.kind[i] = "gpu"
                self.streams.setdefault(key, []).append(i)
                if isinstance(corr, int):
                    self.corr_gpu.setdefault(corr, []).append(i)
            elif c == "gpu_user_annotation":
                self.kind[i] = "gpuann"
                self.streams.setdefault(("ann",) + key, []).append(i)
            elif c == "cuda_sync":
                self.kind[i] = "gsync"
            else:
                self.kind[i] = "host"
                self.threads.setdefault(key, []).append(i)
                name = e.get("name", "")
                if c in RUNTIME_CATS and isinstance(name, str):
                    if isinstance(corr, int):
                        self.corr_host[corr] = i
                    if LAUNCH_RE.search(name):
                        self.launches.append(i)
                    elif SYNC_RE.search(name) or BLOCKING_COPY_RE.match(name):
                        self.syncs.append(i)
        self.thread_launches = {}
        for h in self.launches:
            self.thread_launches.setdefault(_key_of(ev[h]), []).append(h)
        self.key = {}
        for k, lst in self.streams.items():
            lst.sort(key=lambda i: (self.ts[i], self.dur[i]))
            for i in lst:
                self.key[i] = k
        self.parent = {}
        for k, lst in self.threads.items():
            lst.sort(key=lambda i: (self.ts[i], -self.dur[i]))
            stack = []
            for i in lst:
                s, t = self.ts[i], self.ts[i] + self.dur[i]
                while stack and self.ts[stack[-1]] + self.dur[stack[-1]] < t:
                    stack.pop()
                if stack:
                    self.parent[i] = stack[-1]
                stack.append(i)
                self.key[i] = k
        self.gsync_of = {}  # cuda_sync marker -> its host call
        for i, kd in self.kind.items():
            if kd == "gsync":
                corr = (ev[i].get("args") or {}).get("correlation")
                if corr in self.corr_host:
                    self.gsync_of[i] = self.corr_host[corr]
        self.sync_stream = {}  # host sync call -> the stream it waits for (None: all)
        for s in self.syncs:
            self.sync_stream[s] = None
            corr = (ev[s].get("args") or {}).get("correlation")
            name = ev[s].get("name", "")
            if BLOCKING_COPY_RE.match(name):
                for g in self.corr_gpu.get(corr, []):
                    self.sync_stream[s] = self.key[g]
            else:
                for m, h in self.gsync_of.items():
                    if h == s:
                        if _key_of(ev[m]) in self.streams:
                            self.sync_stream[s] = _key_of(ev[m])
        # Ends per stream, for the synchronization look-ups.
        self.stream_ends = {}
        for k, lst in self.streams.items():
            if k[0] == "ann":
                continue
            pairs = sorted((self.ts[i] + self.dur[i], i) for i in lst)
            self.stream_ends[k] = ([p[0] for p in pairs], [p[1] for p in pairs])
        self.flows = {}  # (pid, tid, ts) -> [flow/instant event index]
        for i, e in enumerate(ev):
            if isinstance(e, dict) and e.get("ph") in ("s", "f", "t", "i", "I") and "ts" in e:
                try:
                    t = micros_to_ns(e["ts"])
                except ValueError:
                    continue
                self.flows.setdefault((_hashable(e.get("pid")), _hashable(e.get("tid"))), []).append((t, i))

    def name(self, i):
        n = self.events[i].get("name", "")
        return n if isinstance(n, str) else str(n)

    def end(self, i):
        return self.ts[i] + self.dur[i]

    def ancestors(self, i):
        out = []
        while i in self.parent:
            i = self.parent[i]
            out.append(i)
        return out

    def launch_of(self, g):
        corr = (self.events[g].get("args") or {}).get("correlation")
        h = self.corr_host.get(corr)
        return h

    def gpu_of_launch(self, h):
        corr = (self.events[h].get("args") or {}).get("correlation")
        return self.corr_gpu.get(corr, [])

    # ------------------------------------------------------------------ timing model
    def solve(self, dur_extra=None, host_ins=None, min_start=None, min_end=None, pause_ins=None,
              max_rounds=50):
        """Returns (new_ts, new_end, info) for the events that changed.

        dur_extra: {gpu event: extra ns}; host_ins: {host event: extra ns inserted at its
        end}; min_start / min_end: {gpu event: ns} (waits on another stream or rank);
        pause_ins: [(thread key, ns time, extra ns)]: the thread pauses at that time, outside
        any of its events (what starts there or later moves, what encloses it grows)."""
        dur_extra = dur_extra or {}
        host_ins = host_ins or {}
        pauses = [(("at", k, t), d) for k, t, d in (pause_ins or [])]
        min_start = dict(min_start or {})
        min_end = min_end or {}
        sync_add = {}
        for _ in range(max_rounds):
            shift = host_shifts(lambda h: h[1:] if isinstance(h, tuple) else (self.key[h], self.end(h)),
                                list(host_ins.items()) + list(sync_add.items()) + pauses)

            def host_new(i):
                return shifted(shift, self.key[i], self.ts[i], self.end(i))

            lb = dict(min_start)
            for k in shift:
                for h in self.thread_launches.get(k, []):
                    ns, ne = host_new(h)
                    if ne == self.end(h):
                        continue
                    for g in self.gpu_of_launch(h):
                        bound = ne + min(self.ts[g] - self.end(h), 0)
                        if bound > self.ts[g]:
                            lb[g] = max(lb.get(g, 0), bound)
            new_ts, new_end = {}, {}
            touched_streams = {self.key[g] for g in list(dur_extra) + list(lb) + list(min_end)}
            for k in touched_streams:
                run_orig, run_new = None, None
                for g in self.streams[k]:
                    s, d = self.ts[g], self.dur[g] + dur_extra.get(g, 0)
                    start = max(s, lb.get(g, s))
                    if run_orig is not None:
                        overlap = max(0, run_orig - s)
                        start = max(start, run_new - overlap)
                    end = start + d
                    if g in min_end and end < min_end[g]:
                        end = min_end[g]
                    if start != s or end != self.end(g):
                        new_ts[g], new_end[g] = start, end
                    oe = self.end(g)
                    run_orig = oe if run_orig is None else max(run_orig, oe)
                    run_new = end if run_new is None else max(run_new, end)
            changed = False
            # In time order per thread: a sync lengthened in this round moves the later
            # ones of its thread too, which host_new does not know until the next round;
            # without this, every later sync waiting for the same slowed work would be
            # lengthened by the same time again.
            added = {}  # thread -> [(original end of a sync lengthened this round, ns)]
            for sy in sorted(self.syncs, key=self.end):
                req = self._sync_requirement(sy, new_end)
                if req is None:
                    continue
                _, cur = host_new(sy)
                k = self.key[sy]
                cur += sum(d for t, d in added.get(k, []) if t <= self.ts[sy])
                if req > cur:
                    sync_add[sy] = sync_add.get(sy, 0) + req - cur
                    added.setdefault(k, []).append((self.end(sy), req - cur))
                    changed = True
            if not changed:
                break
        else:
            raise RuntimeError("timing model did not converge")
        for k in shift:
            for h in self.threads.get(k, []):
                s, e = host_new(h)
                if s != self.ts[h] or e != self.end(h):
                    new_ts[h], new_end[h] = s, e
        # Time inserted at an event's end is its own time, after its children returned: a
        # child that ends at the same instant (Kineto writes whole microseconds) keeps its
        # end. (A zero-length child at that instant moves whole, as any event there.)
        for h, d in host_ins.items():
            for c in self.threads.get(self.key[h], []):
                if c != h and c in new_end and self.end(c) == self.end(h) and \
                        self.ts[h] <= self.ts[c] < self.end(h) and h in self.ancestors(c):
                    new_end[c] -= d
                    if new_end[c] == self.end(c) and new_ts[c] == self.ts[c]:
                        del new_ts[c], new_end[c]
        for i, h in self.gsync_of.items():
            if h in new_ts:
                new_ts[i] = self.ts[i] + new_ts[h] - self.ts[h]
                new_end[i] = self.end(i) + new_end[h] - self.end(h)
        for k, lst in self.streams.items():
            if k[0] != "ann" or k[1:] not in touched_streams:
                continue
            inner = self.streams[k[1:]]
            starts = [self.ts[g] for g in inner]
            for a in lst:
                lo = bisect.bisect_left(starts, self.ts[a])
                hi = bisect.bisect_right(starts, self.end(a))
                kids = [g for g in inner[lo:hi] if self.end(g) <= self.end(a)]
                if not kids:
                    continue
                d0 = min(new_ts.get(g, self.ts[g]) for g in kids) - min(self.ts[g] for g in kids)
                d1 = max(new_end.get(g, self.end(g)) for g in kids) - max(self.end(g) for g in kids)
                if d0 or d1:
                    new_ts[a], new_end[a] = self.ts[a] + d0, self.end(a) + d1
        info = {"sync_add": sync_add, "shift": shift}
        return new_ts, new_end, info

    def _sync_requirement(self, sy, new_end):
        """The end a host sync call needs given the GPU events that now end later."""
        s0, s1 = self.ts[sy], self.end(sy)
        event_sync = "EventSynchronize" in self.name(sy)
        keys = [self.sync_stream[sy]] if self.sync_stream.get(sy) else list(self.stream_ends)
        req = None
        for k in keys:
            ends, idx = self.stream_ends[k]
            hi = bisect.bisect_right(ends, s1)
            lo = bisect.bisect_right(ends, s0)
            cand = idx[lo:hi]  # ended while the call waited
            if lo > 0 and not event_sync:
                cand = cand + [idx[lo - 1]]  # finished just before the call: no wait then
            for g in cand:
                if g not in new_end:
                    continue
                r = new_end[g] + s1 - max(s0, self.end(g))
                if r > s1 and (req is None or r > req):
                    req = r
        return req

    # ------------------------------------------------------------------ writing
    def write(self, path, new_ts, new_end, info):
        """Writes the trace with the changed events. Flow and instant events on a host
        thread move with the thread's insertions before them; on a GPU stream, those
        anchored at a moved event's start move with it."""
        texts = list(self.texts)
        moved_at = {}  # GPU-side (pid, tid) -> {original start: shift}
        for i in new_ts:
            if self.kind[i] != "host" and new_ts[i] != self.ts[i]:
                moved_at.setdefault(_key_of(self.events[i]), {})[self.ts[i]] = new_ts[i] - self.ts[i]
        for i in new_ts:
            if new_ts[i] != self.ts[i]:
                texts[i] = _retime(texts[i], self.events[i], "ts", ns_to_micros(new_ts[i], self.int_ts[i]))
            if new_end[i] - new_ts[i] != self.dur[i]:
                texts[i] = _retime(texts[i], self.events[i], "dur",
                                   ns_to_micros(new_end[i] - new_ts[i], self.int_dur[i]))
        for k, (ts_list, cum) in info["shift"].items():
            for t, j in self.flows.get(k, []):
                a = bisect.bisect_right(ts_list, t)
                if a:
                    self._move_point(texts, j, t + cum[a - 1])
        for k, at in moved_at.items():
            for t, j in self.flows.get(k, []):
                d = at.get(t)
                if d:
                    self._move_point(texts, j, t + d)
        self._write_texts(path, texts)

    def _move_point(self, texts, j, t):
        texts[j] = _retime(texts[j], self.events[j], "ts",
                           ns_to_micros(t, isinstance(self.events[j]["ts"], int)))

    def _write_texts(self, path, texts):
        with open(path, "w", encoding="utf-8") as f:
            if not isinstance(self.top, dict):
                f.write("[\n")
                f.write(",\n".join(texts))
                f.write("\n]\n")
                return
            f.write("{")
            for n, (k, v) in enumerate(self.top.items()):
                f.write((",\n" if n else "") + json.dumps(k) + ":")
                if k == "traceEvents":
                    f.write("[\n")
                    f.write(",\n".join(texts))
                    f.write("\n]")
                else:
                    f.write(dumps(v))
            f.write("}\n")


def _hashable(v):
    return json.dumps(v) if isinstance(v, (list, dict)) else v


def _key_of(e):
    return (_hashable(e.get("pid")), _hashable(e.get("tid")))
