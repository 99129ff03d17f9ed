#!/usr/bin/env python3
"""Checks the stage layering of Teller's sources (docs/architecture.md, "Rules the build checks").

Every stage is a folder src/<stage>/ with public headers in include/teller/<stage>/. Data
flows one way, so a stage may include only core, the stages before it and the side modules
it is built on (ALLOWED below); private headers (src/<stage>/*.h) belong to their own stage
and its tests. Prints one line per violation, `file:line: what`, and exits 1 when there is
any; exits 0 otherwise.

usage: tools/check_includes.py [REPO_ROOT]
"""
import os
import re
import sys

# Stage -> the stages it may include besides itself. The pipeline order is core, format,
# collect, ingest, logs, reconstruct, localize, slice, tpe, diagnose, report; sim, inject,
# dataset, rca (the learned models) and eval sit beside it, cli on top.
PIPELINE = ["core", "format", "collect", "ingest", "logs", "reconstruct", "localize", "slice",
            "tpe", "diagnose", "report"]
ALLOWED = {stage: set(PIPELINE[:i]) for i, stage in enumerate(PIPELINE)}
ALLOWED.update({
    "sim": {"core", "format"},
    "inject": {"core", "format", "ingest", "reconstruct", "sim"},
    "dataset": {"core", "format", "ingest", "logs", "reconstruct"},
    "rca": {"core", "format", "tpe"},
    "eval": {"core", "format", "ingest", "logs", "reconstruct", "localize", "slice",
             "diagnose", "dataset", "rca"},
})
ALLOWED["cli"] = set(ALLOWED) - {"cli"}

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def stage_of(path):
    """The stage a source file belongs to: src/<stage>/... or include/teller/<stage>/..."""
    parts = path.split(os.sep)
    if len(parts) >= 2 and parts[0] == "src":
        return parts[1]
    if len(parts) >= 3 and parts[0] == "include" and parts[1] == "teller":
        return parts[2]
    return None


def target_of(include):
    """(stage, private) named by an include, or None for anything else."""
    m = re.match(r"teller/([a-z_]+)/", include)
    if m:
        return m.group(1), False
    m = re.match(r"src/([a-z_]+)/", include)
    if m:
        return m.group(1), True
    return None


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    os.chdir(root)
    problems = []
    for top in ("src", "include"):
        for folder, _, files in os.walk(top):
            for name in sorted(files):
                if not name.endswith((".cc", ".h", ".h.in", ".c")):
                    continue
                path = os.path.join(folder, name)
                stage = stage_of(path)
                if stage is None:
                    continue
                if stage not in ALLOWED:
                    problems.append(f"{path}:1: stage '{stage}' has no entry in {__file__}")
                    continue
                with open(path, encoding="utf-8", errors="replace") as f:
                    for line_no, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        t = target_of(m.group(1))
                        if t is None:
                            continue
                        other, private = t
                        if other == stage:
                            if private and top == "include":
                                problems.append(f"{path}:{line_no}: public header includes "
                                                f"private {m.group(1)}")
                            continue
                        if private:
                            problems.append(f"{path}:{line_no}: includes {m.group(1)}, private "
                                            f"to stage '{other}'")
                        elif other not in ALLOWED[stage]:
                            problems.append(f"{path}:{line_no}: stage '{stage}' may not include "
                                            f"'{other}' ({m.group(1)})")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
