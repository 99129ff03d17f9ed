"""An Nsight Systems SQLite export read and edited in place, and the timing model that
plants a fault in it (the counterpart of trace.py for `nsys export --type sqlite` files).

Events: one per row of CUPTI_ACTIVITY_KIND_{KERNEL,MEMCPY,MEMSET} (GPU work, queued per
(globalPid, deviceId, streamId)), CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (the GPU-side record
of a host sync call, same correlationId), CUPTI_ACTIVITY_KIND_RUNTIME (runtime and driver
calls, and the CUDA backtrace rows that enclose them), NVTX_EVENTS with an end (ranges)
and OSRT_API (host events per globalTid). NVTX rows without an end (marks, open ranges)
are points that move with their thread. Times are the export's integer ns; only the
start/end columns of changed rows are rewritten, every other byte of the data is kept.

Timing model (`NsysTrace.solve`), in integer ns on the original timeline:
- GPU queues: the events of one stream stay serial. An event starts at the latest of its
  own start, its lower bound (its launch moved) and the end of the events before it (an
  original overlap, if any, is kept, never increased).
- Host threads: extra time inserted at a point t of a thread (a launch call made longer, a
  synchronization that waits longer) moves every later event of the thread by that amount
  and lengthens every event that spans t (the call itself, the backtrace row and the NVTX
  ranges that enclose it).
- Launch: GPU work issued by a call (kernel launch, copy, memset; same correlationId)
  starts no earlier than the call's new end (minus the original head start, when it
  started before the call returned; plus the original launch latency, when it started
  after the call returned on an idle stream), the call's own wait for the GPU left out.
  (Keeping that latency keeps "sync end - last GPU end" of later syncs as it was.)
- Synchronization: a host sync call (cuda Stream/Device/Event/Context Synchronize,
  blocking cudaMemcpy) that was waiting for GPU work which now ends later returns that
  much later; a device/context sync waits for every stream of its process, a stream or
  event sync for the stream its SYNCHRONIZATION record names, a blocking copy for its own
  stream. The extra time is an insertion on the host thread, so the model is iterated to
  a fixed point, one sync per thread and round in time order (the earliest one that must
  wait longer), so that a wait is never counted twice. SYNCHRONIZATION records follow their host call (start and end).
"""
import bisect
import re
import shutil
import sqlite3

from .common import host_shifts, shifted

GPU_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")
SYNC_TABLE = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
RUNTIME_TABLE = "CUPTI_ACTIVITY_KIND_RUNTIME"
HOST_TABLES = (RUNTIME_TABLE, "NVTX_EVENTS", "OSRT_API")
EVENT_TABLES = GPU_TABLES + (SYNC_TABLE,) + HOST_TABLES
NO_STREAM = 0xFFFFFFFF

LAUNCH_RE = re.compile(r"LaunchKernel|LaunchCooperativeKernel|GraphLaunch|ModuleLaunch", re.I)
SYNC_RE = re.compile(r"(Stream|Device|Event|Context|Ctx)Synchronize$")
BLOCKING_COPY_RE = re.compile(r"^(cuda|cu)Memcpy(2D|3D|DtoH|HtoD|DtoD)?(_v2)?$")
VERSION_SUFFIX = re.compile(r"_v\d+$")

# CUpti_ActivityMemcpyKind labels as nsys writes them (ENUM_CUDA_MEMCPY_OPER), for exports
# without that table.
MEMCPY_LABELS = ("Unknown", "Host-to-Device", "Device-to-Host", "Host-to-Array", "Array-to-Host",
                 "Array-to-Array", "Array-to-Device", "Device-to-Array", "Device-to-Device",
                 "Host-to-Host", "Peer-to-Peer")
SYNC_LABELS = ("Unknown", "Event sync", "Stream wait sync", "Stream sync", "Context sync")
CLASS_FALLBACK = {"runtime": 0, "driver": 1, "backtrace": 67}


def api_base(name):
    """cudaMemcpy_v3020 -> cudaMemcpy."""
    return VERSION_SUFFIX.sub("", name)


def columns(db, table):
    return [r[0] for r in db.execute("SELECT name FROM pragma_table_info(?)", (table,))]


def tables(db):
    return [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]


class NsysTrace:
    def __init__(self, path):
        self.path = path
        db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
        try:
            self._load(db)
        finally:
            db.close()

    def _load(self, db):
        tabs = set(tables(db))
        self.tables = tabs
        self.strings = dict(db.execute("SELECT id, value FROM StringIds")) if "StringIds" in tabs else {}
        cls = dict(CLASS_FALLBACK)
        if "ENUM_NSYS_EVENT_CLASS" in tabs:
            for i, n in db.execute("SELECT id, name FROM ENUM_NSYS_EVENT_CLASS"):
                for k, want in (("runtime", "TRACE_PROCESS_EVENT_CUDA_RUNTIME"),
                                ("driver", "TRACE_PROCESS_EVENT_CUDA_DRIVER"),
                                ("backtrace", "TRACE_PROCESS_EVENT_CUDABACKTRACE")):
                    if n == want:
                        cls[k] = i
        memcpy_labels = dict(enumerate(MEMCPY_LABELS))
        if "ENUM_CUDA_MEMCPY_OPER" in tabs and "label" in columns(db, "ENUM_CUDA_MEMCPY_OPER"):
            memcpy_labels.update(dict(db.execute("SELECT id, label FROM ENUM_CUDA_MEMCPY_OPER")))

        self.row = []  # event index -> (table, rowid)
        self.ts, self.dur, self.kind, self.names, self.key = {}, {}, {}, {}, {}
        self.info = {}  # extra per event: signature, bytes, corr, class
        self.streams, self.threads, self.points = {}, {}, {}
        self.corr_host, self.corr_gpu, self.corr_sync = {}, {}, {}
        self.launchers, self.syncs = [], []

        def text(v):
            if isinstance(v, str):
                return v
            return self.strings.get(v, "") if v is not None else ""

        def add(table, rowid, s, e, kind, key, name):
            i = len(self.row)
            self.row.append((table, rowid))
            self.ts[i], self.dur[i] = s, max(0, (e if e is not None else s) - s)
            self.kind[i], self.key[i], self.names[i] = kind, key, name
            return i

        for table in GPU_TABLES:
            if table not in tabs:
                continue
            cols = set(columns(db, table))
            sel = ["rowid", "start", "end", "deviceId", "streamId", "correlationId", "globalPid"]
            if table.endswith("KERNEL"):
                sel += [c if c in cols else "NULL" for c in
                        ("demangledName", "shortName", "mangledName", "gridX", "gridY", "gridZ",
                         "blockX", "blockY", "blockZ")]
            else:
                sel += [c if c in cols else "NULL" for c in ("bytes", "copyKind")]
            for r in db.execute("SELECT %s FROM %s" % (", ".join(sel), table)):
                rowid, s, e, dev, stream, corr, gpid = r[:7]
                if s is None or gpid is None:
                    continue
                key = (gpid, dev, stream)
                if table.endswith("KERNEL"):
                    name = text(r[7]) or text(r[8]) or text(r[9])
                    extra = {"signature": tuple(r[10:16])}
                elif table.endswith("MEMCPY"):
                    name = "[CUDA memcpy %s]" % memcpy_labels.get(r[8], "kind %s" % r[8])
                    extra = {"bytes": r[7]}
                else:
                    name = "[CUDA memset]"
                    extra = {"bytes": r[7]}
                i = add(table, rowid, s, e, "gpu", key, name)
                extra["table"] = table
                self.info[i] = extra
                self.streams.setdefault(key, []).append(i)
                if corr is not None:
                    self.corr_gpu.setdefault(corr, []).append(i)

        sync_labels = dict(enumerate(SYNC_LABELS))
        if "ENUM_CUPTI_SYNC_TYPE" in tabs and "label" in columns(db, "ENUM_CUPTI_SYNC_TYPE"):
            sync_labels.update(dict(db.execute("SELECT id, label FROM ENUM_CUPTI_SYNC_TYPE")))
        if SYNC_TABLE in tabs:
            for rowid, s, e, dev, stream, corr, gpid, st in db.execute(
                    "SELECT rowid, start, end, deviceId, streamId, correlationId, globalPid, syncType FROM %s"
                    % SYNC_TABLE):
                if s is None:
                    continue
                i = add(SYNC_TABLE, rowid, s, e, "gsync", None, "[CUDA %s]" % sync_labels.get(st, "Unknown"))
                self.info[i] = {"stream": (gpid, dev, stream)}
                if corr is not None:
                    self.corr_sync.setdefault(corr, []).append(i)

        for table in HOST_TABLES:
            if table not in tabs:
                continue
            cols = set(columns(db, table))
            if table == RUNTIME_TABLE:
                sel = ["rowid", "start", "end", "globalTid", "eventClass", "correlationId",
                       "nameId" if "nameId" in cols else "NULL", "name" if "name" in cols else "NULL"]
            elif table == "NVTX_EVENTS":
                sel = ["rowid", "start", "end", "globalTid", "eventType", "NULL",
                       "textId" if "textId" in cols else "NULL", "text" if "text" in cols else "NULL"]
            else:
                sel = ["rowid", "start", "end", "globalTid", "eventClass", "NULL", "nameId", "NULL"]
            for rowid, s, e, tid, ecls, corr, nid, ntext in db.execute(
                    "SELECT %s FROM %s" % (", ".join(sel), table)):
                if s is None or tid is None:
                    continue
                name = ntext if isinstance(ntext, str) and ntext else text(nid)
                if table == "NVTX_EVENTS" and e is None:
                    i = add(table, rowid, s, None, "point", tid, name)
                    self.points.setdefault(tid, []).append(i)
                    continue
                i = add(table, rowid, s, e, "host", tid, name)
                self.info[i] = {"table": table}
                self.threads.setdefault(tid, []).append(i)
                if table == RUNTIME_TABLE and ecls != cls["backtrace"] and corr is not None:
                    self.corr_host[corr] = i
                    self.info[i]["api"] = True
        self.corr_of = {h: c for c, h in self.corr_host.items()}
        # Launchers: calls whose correlation id names GPU work; syncs: calls that wait.
        for corr, h in self.corr_host.items():
            if corr in self.corr_gpu:
                self.launchers.append(h)
            base = api_base(self.names[h])
            if SYNC_RE.search(base) or BLOCKING_COPY_RE.match(base):
                self.syncs.append(h)
        self.thread_launchers = {}
        for h in self.launchers:
            self.thread_launchers.setdefault(self.key[h], []).append(h)
        for lst in self.streams.values():
            lst.sort(key=lambda i: (self.ts[i], self.dur[i]))
        self.parent = {}
        for k, lst in self.threads.items():
            lst.sort(key=lambda i: (self.ts[i], -self.dur[i]))
            stack = []
            for i in lst:
                t = self.end(i)
                while stack and self.end(stack[-1]) < t:
                    stack.pop()
                if stack:
                    self.parent[i] = stack[-1]
                stack.append(i)
        self.gsync_of = {}
        for corr, lst in self.corr_sync.items():
            if corr in self.corr_host:
                for m in lst:
                    self.gsync_of[m] = self.corr_host[corr]
        self.sync_keys = {}  # host sync call -> the streams it waits for
        for s in self.syncs:
            corr = self._corr(s)
            pid = self.key[s] >> 24
            base = api_base(self.names[s])
            keys = []
            if BLOCKING_COPY_RE.match(base):
                keys = sorted({self.key[g] for g in self.corr_gpu.get(corr, [])})
            elif "Stream" in base or "Event" in base:
                for m in self.corr_sync.get(corr, []):
                    k = self.info[m]["stream"]
                    if k[2] != NO_STREAM and k in self.streams:
                        keys.append(k)
            if not keys:
                keys = sorted(k for k in self.streams if k[0] >> 24 == pid)
            self.sync_keys[s] = keys
        self.stream_ends = {}
        for k, lst in self.streams.items():
            pairs = sorted((self.end(i), i) for i in lst)
            self.stream_ends[k] = ([p[0] for p in pairs], [p[1] for p in pairs])

    # ------------------------------------------------------------------ look-ups
    def _corr(self, h):
        return self.corr_of.get(h)

    def name(self, i):
        return self.names[i]

    def end(self, i):
        return self.ts[i] + self.dur[i]

    def ancestors(self, i):
        out = []
        while i in self.parent:
            i = self.parent[i]
            out.append(i)
        return out

    def launch_of(self, g):
        if not hasattr(self, "_launch_of"):
            self._launch_of = {}
            for c, h in self.corr_host.items():
                for x in self.corr_gpu.get(c, []):
                    self._launch_of[x] = h
        return self._launch_of.get(g)

    def gpu_of_launch(self, h):
        if not hasattr(self, "_gpu_of"):
            self._gpu_of = {h2: self.corr_gpu.get(c, []) for c, h2 in self.corr_host.items()}
        return self._gpu_of.get(h, [])

    def launch_gap(self, h, g):
        """How long after its launch call returned GPU event g started, as far as that was
        launch latency: the part of the gap the stream was idle (work queued behind other
        work may start sooner after a late launch); negative when it started before the
        call returned."""
        lat = self.ts[g] - self.end(h)
        if lat <= 0:
            return lat
        if not hasattr(self, "_idle"):
            self._idle = {}
            for lst in self.streams.values():
                run = None
                for x in lst:
                    self._idle[x] = self.ts[x] - run if run is not None else None
                    run = self.end(x) if run is None else max(run, self.end(x))
        idle = self._idle.get(g)
        return lat if idle is None else min(lat, max(0, idle))

    def is_kernel(self, g):
        return self.kind[g] == "gpu" and self.info[g]["table"].endswith("KERNEL")

    def is_memcpy(self, g):
        return self.kind[g] == "gpu" and self.info[g]["table"].endswith("MEMCPY")

    def nvtx_ranges_of(self, h):
        return [a for a in self.ancestors(h) if self.row[a][0] == "NVTX_EVENTS"]

    # ------------------------------------------------------------------ timing model
    def solve(self, dur_extra=None, host_ins=None, max_rounds=5000):
        """Returns (new_ts, new_end, info) for the events that changed.

        dur_extra: {gpu event: extra ns}; host_ins: {host call: extra ns inserted at its end}."""
        dur_extra = dur_extra or {}
        host_ins = host_ins or {}
        sync_add = {}
        for _ in range(max_rounds):
            shift = host_shifts(lambda h: (self.key[h], self.end(h)),
                                list(host_ins.items()) + list(sync_add.items()))

            def host_new(i):
                return shifted(shift, self.key[i], self.ts[i], self.end(i))

            lb = {}
            for k in shift:
                for h in self.thread_launchers.get(k, []):
                    _, ne = host_new(h)
                    ne -= sync_add.get(h, 0)  # the launch point: before the call's own wait
                    if ne == self.end(h):
                        continue
                    for g in self.gpu_of_launch(h):
                        bound = ne + self.launch_gap(h, g)
                        if bound > self.ts[g]:
                            lb[g] = max(lb.get(g, 0), bound)
            new_ts, new_end = {}, {}
            for k in {self.key[g] for g in list(dur_extra) + list(lb)}:
                run_orig = run_new = None
                for g in self.streams[k]:
                    s, d = self.ts[g], self.dur[g] + dur_extra.get(g, 0)
                    start = max(s, lb.get(g, s))
                    if run_orig is not None:
                        start = max(start, run_new - max(0, run_orig - s))
                    end = start + d
                    if start != s or end != self.end(g):
                        new_ts[g], new_end[g] = start, end
                    run_orig = self.end(g) if run_orig is None else max(run_orig, self.end(g))
                    run_new = end if run_new is None else max(run_new, end)
            # Only the earliest sync of each thread that must wait longer takes its extra
            # time this round: the GPU work a later sync waits for can still move with
            # that insertion (its launch moves), and extra time once given is never taken
            # back, so adding it for every sync at once would count a wait twice.
            first = {}
            for sy in self.syncs:
                k = self.key[sy]
                if k in first and self.ts[first[k][0]] <= self.ts[sy]:
                    continue
                req = self._sync_requirement(sy, new_end)
                if req is None:
                    continue
                _, cur = host_new(sy)
                if req > cur:
                    first[k] = (sy, req - cur)
            if not first:
                break
            for sy, d in first.values():
                sync_add[sy] = sync_add.get(sy, 0) + d
        else:
            raise RuntimeError("timing model did not converge")
        for k in shift:
            for h in self.threads.get(k, []):
                s, e = host_new(h)
                if s != self.ts[h] or e != self.end(h):
                    new_ts[h], new_end[h] = s, e
            for p in self.points.get(k, []):
                s, _ = host_new(p)
                if s != self.ts[p]:
                    new_ts[p], new_end[p] = s, s
        for m, h in self.gsync_of.items():
            if h in new_ts:
                new_ts[m] = self.ts[m] + new_ts[h] - self.ts[h]
                new_end[m] = self.end(m) + new_end[h] - self.end(h)
        return new_ts, new_end, {"sync_add": sync_add, "shift": shift}

    def _sync_requirement(self, sy, new_end):
        """The end a host sync call needs given the GPU events that now end later."""
        s0, s1 = self.ts[sy], self.end(sy)
        event_sync = "EventSynchronize" in self.names[sy]
        req = None
        for k in self.sync_keys[sy]:
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
    def write(self, path, new_ts, new_end):
        shutil.copyfile(self.path, path)
        db = sqlite3.connect(path)
        try:
            by_table = {}
            for i in new_ts:
                table, rowid = self.row[i]
                if self.kind[i] == "point":
                    by_table.setdefault((table, True), []).append((new_ts[i], rowid))
                else:
                    by_table.setdefault((table, False), []).append((new_ts[i], new_end[i], rowid))
            for (table, point), rows in by_table.items():
                if point:
                    db.executemany('UPDATE %s SET start = ? WHERE rowid = ?' % table, rows)
                else:
                    db.executemany('UPDATE %s SET start = ?, "end" = ? WHERE rowid = ?' % table, rows)
            db.commit()
        finally:
            db.close()
