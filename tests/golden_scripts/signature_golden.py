#!/usr/bin/env python3
"""Expected operator signatures (docs/signature.md) of the importer tests on real traces
(KinetoSignatureRealTest in tests/ingest/kineto_importer_test.cc, NsysImporterTest.
CloverleafKernelSignatures in tests/ingest/nsys_importer_test.cc), computed from the
grammar with Python's json, gzip and sqlite3 only, independently of the importers: values
are taken from the parsed JSON / SQL rows and written out again, never from the raw text.

Usage: python3 tests/golden_scripts/signature_golden.py [REAL_DATA_DIR]
REAL_DATA_DIR defaults to ../shared/data/real beside the repository.
"""
import collections
import gzip
import json
import os
import sqlite3
import sys
import tempfile

# Row type of each ph 'X' category (as in kineto_golden.py); other categories are no rows.
K = {
    "cpu_op": "range", "user_annotation": "range", "python_function": "range", "Operator": "range",
    "cuda_runtime": "runtime", "Runtime": "runtime",
    "cuda_driver": "driver",
    "kernel": "kernel", "Kernel": "kernel",
    "gpu_memcpy": "memcpy", "Memcpy": "memcpy",
    "gpu_memset": "memset", "Memset": "memset",
    "cuda_sync": "sync",
    "gpu_user_annotation": "gpu_annotation",
}


def esc(text, reserved):
    out = []
    for ch in text:
        if ord(ch) < 0x20 or ord(ch) == 0x7f:
            out.append("\\x%02x" % ord(ch))
        else:
            if ch in reserved:
                out.append("\\")
            out.append(ch)
    return "".join(out)


def name(text):
    return esc(text, "\\ ,[]=")


def uint(v):
    """A non-negative integer (or a numeric string, as ROCm writes some args), else None."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v if v >= 0 else None
    if isinstance(v, str) and v.isdigit():
        return int(v)
    return None


def triple(v):
    if isinstance(v, list) and len(v) == 3 and all(uint(x) is not None and not isinstance(x, str) for x in v):
        return [int(x) for x in v]
    return None


def kineto_signature(row_type, ev):
    a = ev.get("args")
    if not isinstance(a, dict):
        return ""
    fields = []
    if row_type not in ("runtime", "driver", "memcpy", "memset"):
        coll = a.get("Collective name")
        if isinstance(coll, str) and coll:
            fields.append("coll=" + name(coll))
        for key, label in (("In msg nelems", "in"), ("Out msg nelems", "out"), ("Group size", "group")):
            n = uint(a.get(key))
            if n is not None:
                fields.append("%s=%d" % (label, n))
        dtype = a.get("dtype")
        if fields and isinstance(dtype, str) and dtype:
            fields.append("dtype=" + name(dtype))
    if row_type in ("range", "push", "mark"):
        dims = a.get("Input Dims", a.get("Input dims"))  # PyTorch 1.8-1.9: "Input dims"
        if isinstance(dims, list):
            fields.append("dims=" + json.dumps(dims, separators=(",", ":")))
        types = a.get("Input type")
        if isinstance(types, list) and all(isinstance(t, str) for t in types):
            fields.append("types=[" + ",".join(esc(t, "\\,[]") for t in types) + "]")
    if row_type == "kernel":
        grid, block = triple(a.get("grid")), triple(a.get("block"))
        if grid and block:
            fields.append("grid=%d,%d,%d" % tuple(grid))
            fields.append("block=%d,%d,%d" % tuple(block))
            smem = uint(a.get("shared memory"))
            if smem:
                fields.append("smem=%d" % smem)
    if row_type == "memcpy":
        kind = a.get("kind")
        if isinstance(kind, str) and kind and kind not in ev.get("name", ""):
            fields.append("copy=" + name(kind))
    return " ".join(fields)


def kineto_rows(path):
    """(row type, name, signature) of every row the importer keeps, in file order."""
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        doc = json.load(f)
    rows = []
    for ev in doc["traceEvents"]:
        if not isinstance(ev, dict):
            continue
        ph = ev.get("ph")
        if ph == "X":
            t = K.get(ev.get("cat", ""))
        elif ph in ("i", "I"):
            t = "mark"
        elif ph == "B":
            t = "push"
        elif ph == "E":
            t = "pop"
        else:
            t = None
        if t is None or not isinstance(ev.get("name"), str) or "ts" not in ev:
            continue
        rows.append((t, ev["name"], kineto_signature(t, ev)))
    return rows


def fnv1a64(text):
    h = 0xcbf29ce484222325
    for b in text.encode("utf-8"):
        h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
    return h


def report_kineto(real, rel, first_of=None):
    rows = kineto_rows(os.path.join(real, rel))
    print("==", rel)
    # Row by row: FNV-1a 64 of every row's signature, each followed by a newline.
    print("  rows %d, FNV-1a 64 of the signatures in row order: 0x%016x"
          % (len(rows), fnv1a64("".join(s + "\n" for _, _, s in rows))))
    by_type = collections.defaultdict(list)
    for t, n, s in rows:
        by_type[t].append((n, s))
    for t in sorted(by_type):
        sigs = [s for _, s in by_type[t] if s]
        if not sigs:
            continue
        print("  %s: rows %d, with signature %d, distinct signatures %d, distinct (name, signature) %d"
              % (t, len(by_type[t]), len(sigs), len(set(sigs)),
                 len({(n, s) for n, s in by_type[t] if s})))
        coll = [s for s in sigs if s.startswith("coll=")]
        if coll:
            print("    with coll=: %d, distinct %d" % (len(coll), len(set(coll))))
    print("  distinct signatures over all rows: %d" % len({s for _, _, s in rows if s}))
    if first_of:
        for t, n, s in rows:
            if t == first_of[0] and n.startswith(first_of[1]):
                print("  first %s %s...: %r" % (t, first_of[1], s))
                break


def report_nsys(real, rel):
    print("==", rel)
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "x.sqlite")
        with gzip.open(os.path.join(real, rel), "rb") as f, open(db, "wb") as out:
            out.write(f.read())
        con = sqlite3.connect(db)
        sigs = []
        for row in con.execute("SELECT gridX, gridY, gridZ, blockX, blockY, blockZ,"
                               " staticSharedMemory, dynamicSharedMemory FROM CUPTI_ACTIVITY_KIND_KERNEL"):
            g, b = row[0:3], row[3:6]
            if any(x is None or x < 0 for x in g + b):
                sigs.append("")
                continue
            s = "grid=%d,%d,%d block=%d,%d,%d" % (g + b)
            smem = sum(x for x in row[6:8] if x is not None and x > 0)
            if smem:
                s += " smem=%d" % smem
            sigs.append(s)
        con.close()
    print("  kernels %d, with signature %d, distinct signatures %d"
          % (len(sigs), sum(1 for s in sigs if s), len(set(s for s in sigs if s))))
    print("  most common: %r x%d" % collections.Counter(sigs).most_common(1)[0])


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    real = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "..", "..", "shared", "data", "real")
    report_kineto(real, "hta/nccl_parser_config__nccl_data.json.gz", ("kernel", "ncclKernel_AllReduce"))
    report_kineto(real, "kineto/resnet50_nw0_worker0.1623143089861.pt.trace.json.gz", ("range", "aten::conv2d"))
    report_kineto(real, "hta/amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz")
    report_nsys(real, "nsys_pipit/perlmutter-cloverleaf-cuda.sqlite.gz")


if __name__ == "__main__":
    main()
