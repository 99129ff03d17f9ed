#!/usr/bin/env python3
"""End-to-end tests of `teller inspect` and `teller dataset export` on traces made by
`teller run`: the bundled demo (C++ NVTX, vLLM-style logs) and a Python program driving
a fake vLLM v1 engine under the real Python hooks. Checks per-request projection and
log alignment. Usage: inspect_e2e_test.py --teller T --demo D --source-dir S --case C"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def run(cmd, env=None, check=True):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if check and p.returncode != 0:
        sys.exit("command failed (%d): %s\nstdout:\n%s\nstderr:\n%s" %
                 (p.returncode, " ".join(cmd), p.stdout, p.stderr))
    return p


def expect(cond, what):
    if not cond:
        sys.exit("FAILED: " + what)
    print("ok: " + what)


def inspect_json(teller, trace, *extra):
    return json.loads(run([teller, "inspect", "--json", trace, *extra]).stdout)


def case_demo(args, tmp):
    trace = os.path.join(tmp, "demo")
    requests = 10
    run([args.teller, "run", "--out", trace, "--", args.demo, str(requests), "5"])
    stdout_lines = sum(1 for _ in open(os.path.join(trace, "logs", "stdout.log")))
    s = inspect_json(args.teller, trace)
    expect(s["processes"] == 1, "one process")
    expect(s["requests"] == requests, "every request found from the step ranges (%d)" % s["requests"])
    expect(s["steps"] > requests, "steps found (%d)" % s["steps"])
    expect(s["unmatched_push"] == 0 and s["unmatched_pop"] == 0, "ranges balanced")
    expect(s["kernels"] == 0 and s["host_calls"] == 0, "no GPU on this machine: no kernels")
    expect(s["log_lines"] == stdout_lines, "every captured line imported (%d)" % s["log_lines"])
    # Each request logs Received/Added/Finished with its id: all of them align.
    expect(s["log_lines_aligned"] >= 3 * requests, "request lines aligned (%d)" % s["log_lines_aligned"])
    for k in ("events", "threads", "ranges", "kernels_linked", "kernels_orphan", "memcpy", "memset",
              "comm_kernels", "graph_launches", "parse_seconds"):
        expect(k in s, "json has " + k)

    one = inspect_json(args.teller, trace, "--request", "cmpl-1000")
    steps = one["request_steps"]
    expect(len(steps) >= 2, "cmpl-1000 has its prefill and decode steps (%d)" % len(steps))
    expect(steps[0]["kind"] == "prefill", "first step of cmpl-1000 is its prefill")
    expect(sum(st["log_lines"] for st in steps) >= 3, "cmpl-1000's own log lines are on its steps")

    tree = run([args.teller, "inspect", trace, "--request", "cmpl-1000", "--tree"]).stdout
    expect("[STEP] teller.step kind=prefill" in tree, "tree shows the step")
    expect("[FRONTEND] attention" in tree and "[FRONTEND] model.layers.3" in tree, "tree shows layers and ops")
    expect("Received request cmpl-1000" in tree, "request log lines printed with the step")
    missing = run([args.teller, "inspect", trace, "--request", "nope"], check=False)
    expect(missing.returncode == 1 and "not in any step" in missing.stderr, "unknown request is a clear error")

    out = os.path.join(tmp, "dataset")
    run([args.teller, "dataset", "export", trace, "--out", out, "--setting", "demo"])
    root = os.path.join(out, "demo")
    dirs = sorted(e for e in os.listdir(root) if os.path.isdir(os.path.join(root, e)))
    expect(len(dirs) == requests, "one directory per request")
    expect(os.path.isfile(os.path.join(root, "templates.txt")), "the log templates beside them")
    d = os.path.join(out, "demo", "cmpl-1000")
    t = json.load(open(os.path.join(d, "trace.json")))
    a = json.load(open(os.path.join(d, "annotation.json")))
    expect(t["request"] == "cmpl-1000" and len(t["steps"]) == len(steps), "trace.json has the request's steps")
    nodes = t["steps"][0]["nodes"]
    expect(nodes[0]["layer"] == "STEP" and nodes[0]["parent"] == -1, "step is the root of its nodes")
    expect(all(0 <= n["parent"] < n["id"] for n in nodes[1:]), "parents precede children")
    expect(len(nodes) == 1 + 4 * 3 + 2, "step, 4 layers x (layer, attention, mlp), execute_model, sample")
    expect(a["is_fault"] is None and len(a["steps"]) == len(steps), "annotation has empty labels per step")
    log = open(os.path.join(d, "log.txt")).read()
    expect("Received request cmpl-1000" in log, "log.txt has the request's lines")


def case_python(args, tmp):
    trace = os.path.join(tmp, "py")
    env = dict(os.environ)
    hooks_tests = os.path.join(args.source_dir, "..", "collect", "python")
    env["PYTHONPATH"] = os.path.join(hooks_tests, "fake_vllm")
    p = run([args.teller, "run", "--python-hooks", "vllm", "--out", trace, "--",
             sys.executable, os.path.join(hooks_tests, "program.py")], env=env, check=False)
    expect(p.returncode == 3, "program ran under teller run (status passes through)")
    s = inspect_json(args.teller, trace)
    # program.py's plan: steps of (cmpl-1, cmpl-2), (cmpl-1, cmpl-2), (cmpl-1, "cmpl 3,x=%é"),
    # 300 "req-NNNN-..." ids in one step, then thr-1 on a thread, then boom-1 (raises).
    ids = {"cmpl-1", "cmpl-2", "cmpl 3,x=%\u00e9", "thr-1", "boom-1"}
    expect(s["requests"] == len(ids) + 300, "requests projected from hooked steps (%d)" % s["requests"])
    expect(s["steps"] == 6, "six steps (%d)" % s["steps"])
    big = inspect_json(args.teller, trace, "--request", "req-0299-abcdefghijklmnop")
    expect(len(big["request_steps"]) == 1 and big["request_steps"][0]["batch"] == 300,
           "ids continued in teller.reqs marks belong to their step")
    esc = inspect_json(args.teller, trace, "--request", "cmpl 3,x=%\u00e9")
    expect(len(esc["request_steps"]) == 1 and esc["request_steps"][0]["kind"] == "mixed",
           "escaped id decoded; step kind kept")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--teller", required=True)
    ap.add_argument("--demo", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--case", required=True, choices=["demo", "python"])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        {"demo": case_demo, "python": case_python}[args.case](args, tmp)
    print("passed")


if __name__ == "__main__":
    main()
