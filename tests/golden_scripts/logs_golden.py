#!/usr/bin/env python3
"""Expected values of the log importer's golden tests on real logs
(tests/ingest/log_importer_test.cc: RealProductionStackServerLog,
RealProductionStackRouterLog, RealLlmCompressorMixedLog, LoghubSamplesImport), counted
with regular expressions over the raw lines, independently of the importer.

Usage: python3 tests/golden_scripts/logs_golden.py [REAL_DATA_DIR]
REAL_DATA_DIR defaults to ../shared/data/real beside the repository (the default of the
CMake variable TELLER_REAL_DATA_DIR). Lines are split at '\\n' only, as grep does: a tqdm
bar redrawn with '\\r' stays one line.
"""
import os
import re
import sys


def lines(path, strip_ansi=False):
    with open(path, "rb") as f:
        data = f.read().decode("utf-8", errors="replace")
    out = data.split("\n")
    if out and out[-1] == "":
        out.pop()
    if strip_ansi:
        out = [re.sub(r"\x1b\[[0-9;]*m", "", l) for l in out]
    return out


def count(ls, pattern):
    r = re.compile(pattern)
    return sum(1 for l in ls if r.search(l))


def blank(ls):
    return count(ls, r"^\s*$")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    real = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "..", "..", "shared", "data", "real")
    logs = os.path.join(real, "vllm_logs")

    print("== RealProductionStackServerLog: vllm_logs/production-stack_vllm_server.log")
    ls = lines(os.path.join(logs, "production-stack_vllm_server.log"))
    rows = len(ls) - blank(ls)
    info, warning = count(ls, r"^INFO[ :]"), count(ls, r"^WARNING |^\[rank\d+\]:\[W")
    error = count(ls, r"^ERROR|^\[rank\d+\]:\[E")
    print("rows", rows, "empty_lines", blank(ls))
    timed = count(ls, r"^(INFO|WARNING|ERROR|DEBUG) \d{2}-\d{2} [0-9:]{8} |^\[rank\d+\]:\[[IWEF]\d{3,4} ")
    print("timed", timed, "no_timestamp", rows - timed)
    print("with_request", count(ls, r"request [0-9a-f-]{8,}|chatcmpl-|cmpl-"))
    print("info", info, "warning", warning, "error", error, "unknown", rows - info - warning - error)
    print("progress_lines", count(ls, "\r"))

    print("== RealProductionStackRouterLog: vllm_logs/production-stack_router.log (ANSI colours removed)")
    ls = lines(os.path.join(logs, "production-stack_router.log"), strip_ansi=True)
    rows = len(ls) - blank(ls)
    info, debug = count(ls, r"^(\[[^]]*\] )?INFO:"), count(ls, r"^(\[[^]]*\] )?DEBUG:")
    print("rows", rows)
    print("timed", count(ls, r"^\[\d{4}-\d{2}-\d{2} [0-9:]{8},\d{3}\]"))
    print("with_request", count(ls, r"request [0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"))
    print("info", info, "debug", debug, "unknown", rows - info - debug)

    print("== RealLlmCompressorMixedLog: vllm_logs/llm-compressor_vllm_eval.log")
    ls = lines(os.path.join(logs, "llm-compressor_vllm_eval.log"))
    p = r"^(\x1b\[0;36m\(EngineCore_DP0 pid=[0-9]+\)\x1b\[0;0m )?"
    prefix_only = count(ls, r"^\x1b\[0;36m\(EngineCore_DP0 pid=[0-9]+\)\x1b\[0;0m $")
    rows = len(ls) - blank(ls) - prefix_only
    print("lines", len(ls), "blank", blank(ls), "prefix-only", prefix_only, "rows", rows,
          "empty_lines", blank(ls) + prefix_only)
    vllm = count(ls, p + r"(INFO|WARNING|ERROR|DEBUG) \d\d-\d\d \d\d:\d\d:\d\d ")
    loguru = count(ls, r"^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d")
    lm_eval = count(ls, r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\]")
    c10d = count(ls, r"^\[rank\d+\]:\[[IWEF]\d{3,4} ")
    print("timed %d = vLLM %d + loguru %d + lm-eval %d + c10d %d" % (vllm + loguru + lm_eval + c10d, vllm, loguru,
                                                                      lm_eval, c10d))
    print("with_request", count(ls, r"cmpl-|rid=|request [0-9a-f]{8}"))
    level = {}
    for l in ("INFO", "WARNING", "ERROR"):
        level[l] = count(ls, p + l + r" \d\d-\d\d |^\d{4}-\d\d-\d\d[ T][0-9:.+]+ \| (" + l + r" +|\w+ \| " + l +
                         r" -)|^\[\d{4}-\d\d-\d\d [0-9:]{8}\] " + l + " ")
    level["WARNING"] += count(ls, r"^\[rank\d+\]:\[W")
    print("info", level["INFO"], "warning", level["WARNING"], "error", level["ERROR"], "unknown",
          rows - sum(level.values()))
    print("progress_lines", count(ls, "\r"))
    for pid in (4045786, 4046679):
        n = count(ls, r"^\x1b\[0;36m\(EngineCore_DP0 pid=%d\)" % pid)
        print("pid", pid, "lines", n, "rows", n - 1)

    print("== LoghubSamplesImport: loghub_2k/*_2k.log with a time on every line")
    for system, pattern in (("Hadoop", r"^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d"),
                            ("Zookeeper", r"^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d"),
                            ("OpenStack", r" \d{4}-\d\d-\d\d \d\d:\d\d:\d\d")):
        ls = lines(os.path.join(real, "loghub_2k", system + "_2k.log"))
        print(system, "timed", count(ls, pattern), "of", len(ls))


if __name__ == "__main__":
    main()
