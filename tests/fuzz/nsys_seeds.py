#!/usr/bin/env python3
"""Writes small Nsight Systems seeds for the nsys importer fuzzer.

A real export is megabytes, far beyond what libFuzzer mutates usefully (the campaign's
-max_len is 64 KiB). This keeps the real schema of the tables the importer reads, the
first few rows of each, and only the strings those rows refer to, on 512-byte pages:
seeds of about 25-35 KB that import as a trace with kernels, runtime calls, copies and
NVTX ranges. Usage: nsys_seeds.py EXPORT.sqlite[.gz]|FOLDER OUT_DIR (a folder: every
export in it; none there, or no folder, writes nothing).
"""
import gzip
import os
import shutil
import sqlite3
import sys
import tempfile

# The tables src/ingest/nsys_importer.cc reads; any other table only costs bytes.
TABLES = [
    "TARGET_INFO_SYSTEM_ENV", "TARGET_INFO_SESSION_START_TIME", "TARGET_INFO_GPU",
    "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS",
    "PROCESSES",
]


def write_seed(src, path, rows):
    # A campaign writes its seeds again at every sitting: the same rows, a fresh file.
    if os.path.exists(path):
        os.remove(path)
    dst = sqlite3.connect(path)
    dst.execute("PRAGMA page_size=512")
    referenced = set()
    correlations = set()
    for table in TABLES + ["StringIds"]:
        found = src.execute("SELECT sql FROM sqlite_master WHERE type='table' AND name=?",
                            (table,)).fetchone()
        if found is None:
            continue
        dst.execute(found[0])
        if table == "StringIds":
            kept = [r for r in src.execute("SELECT * FROM StringIds")
                    if r[0] in referenced and len(r[1]) < 300]
        elif table == "CUPTI_ACTIVITY_KIND_RUNTIME" and correlations:
            # The launch calls of the kept kernels and copies, so that links are exercised.
            marks = ",".join("?" * len(correlations))
            kept = src.execute(f"SELECT * FROM {table} WHERE correlationId IN ({marks}) "
                               f"LIMIT {2 * rows}", sorted(correlations)).fetchall()
        else:
            kept = src.execute(f"SELECT * FROM {table} LIMIT {rows}").fetchall()
            columns = [d[1] for d in src.execute(f"PRAGMA table_info({table})")]
            if table.startswith("CUPTI_ACTIVITY_KIND_") and "correlationId" in columns:
                at = columns.index("correlationId")
                correlations.update(r[at] for r in kept)
        # Any small integer may be a string id (nameId, textId, shortName, ...).
        for r in kept:
            referenced.update(v for v in r if isinstance(v, int) and 0 <= v < 1_000_000)
        if kept:
            marks = ",".join("?" * len(kept[0]))
            dst.executemany(f"INSERT INTO {table} VALUES ({marks})", kept)
    dst.commit()
    dst.execute("VACUUM")
    dst.close()


def write_seeds(export, out):
    with tempfile.TemporaryDirectory() as tmp:
        plain = os.path.join(tmp, "export.sqlite")
        opener = gzip.open if export.endswith(".gz") else open
        with opener(export, "rb") as f, open(plain, "wb") as g:
            shutil.copyfileobj(f, g)
        src = sqlite3.connect(plain)
        stem = os.path.basename(export).split(".")[0]
        for rows in (3, 8):
            write_seed(src, os.path.join(out, f"{stem}-{rows}rows.sqlite"), rows)
        src.close()


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: nsys_seeds.py EXPORT.sqlite[.gz]|FOLDER OUT_DIR")
    source, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    if os.path.isdir(source):
        exports = [os.path.join(source, f) for f in sorted(os.listdir(source))
                   if f.endswith((".sqlite", ".sqlite.gz"))]
    elif os.path.isfile(source):
        exports = [source]
    else:
        exports = []
    for export in exports:
        write_seeds(export, out)


if __name__ == "__main__":
    main()
