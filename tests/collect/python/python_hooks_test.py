#!/usr/bin/python3
"""End-to-end tests of the Python hooks: `teller run` a program on a fake vLLM v1
package, then read the trace back with `teller dump` and check the ranges.

usage: python_hooks_test.py --teller PATH --source-dir DIR --case vllm|none|user_specs|torch|torch_direct|torch_unreached
"""
import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

# Hook message grammar helpers live in the package; tests use its unescape().
BIG = ["req-%04d-abcdefghijklmnop" % i for i in range(300)]
EXPECTED_STEPS = [  # (kind, ids, prefill ids or None, tokens), in program order
    ("prefill", ["cmpl-1", "cmpl-2"], None, 12),
    ("decode", ["cmpl-1", "cmpl-2"], None, 2),
    ("mixed", ["cmpl-1", "cmpl 3,x=%\u00e9"], ["cmpl 3,x=%\u00e9"], 5),
    ("decode", BIG, None, 300),
]

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what)


def keep_or_remove(tmp):
    """Removes a test's folder when every check passed, else keeps it and says where."""
    if not failures:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print("trace kept in " + tmp)


def verdict():
    """The exit status of a test: 1 when a check failed."""
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("all checks passed")
    return 0


def unescape(text):
    raw = bytearray()
    i = 0
    while i < len(text):
        if text[i] == "%" and i + 3 <= len(text):
            raw.append(int(text[i + 1:i + 3], 16))
            i += 3
        else:
            raw.extend(text[i].encode("ascii"))
            i += 1
    return raw.decode("utf-8")


def parse(message):
    parts = message.split(" ")
    return parts[0], dict(p.partition("=")[::2] for p in parts[1:])


def ids(value):
    return [unescape(v) for v in value.split(",")] if value else []


def run_traced(args, mode, extra_env, out_dir, program="program.py", fake="fake_vllm",
               prog_args=()):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")  # no __pycache__ in the source tree
    env.pop("TELLER_HOOK_SPECS", None)
    env.update(extra_env)
    pp = ([os.path.join(HERE, fake)] if fake else []) + [os.path.join(HERE, "chained_site")]
    if env.get("PYTHONPATH"):
        pp.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(pp + extra_env.get("_extra_pp", []))
    env.pop("_extra_pp", None)
    cmd = [args.teller, "run", "--out", out_dir, "--python-hooks", mode, "--",
           "/usr/bin/python3", os.path.join(HERE, program)] + list(prog_args)
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=120)
    print("$ " + " ".join(cmd))
    print("--- stdout\n" + p.stdout + "--- stderr\n" + p.stderr + "--- rc %d" % p.returncode)
    return p


def dump(args, out_dir):
    if not [f for f in os.listdir(out_dir) if f.endswith(".tlr")]:
        return []  # nothing called NVTX at all: no trace files, hence no ranges
    p = subprocess.run([args.teller, "dump", out_dir], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True, timeout=120)
    check(p.returncode == 0, "teller dump exits 0 (got %d: %s)" % (p.returncode, p.stderr.strip()))
    events = []
    for line in p.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            events.append(json.loads(line))
    return events


class Range(object):
    def __init__(self, name, pid, tid, start, parent):
        self.name, self.pid, self.tid, self.start, self.parent = name, pid, tid, start, parent
        self.end = None
        self.children = []
        self.marks = []


def build_ranges(events):
    """Push/pop matching per (pid, tid) in file order (which is time order per thread),
    for the "teller" domain; marks attach to the innermost open range."""
    stacks = collections.defaultdict(list)
    ranges, top_marks, unmatched = [], [], 0
    for e in events:
        if e.get("domain") != "teller":
            continue
        key = (e["pid"], e["tid"])
        k = e["kind"]
        if k == "nvtx_push":
            parent = stacks[key][-1] if stacks[key] else None
            r = Range(e["name"], e["pid"], e["tid"], e["ts_ns"], parent)
            if parent is not None:
                parent.children.append(r)
            stacks[key].append(r)
            ranges.append(r)
        elif k == "nvtx_pop":
            if not stacks[key]:
                unmatched += 1
                continue
            r = stacks[key].pop()
            r.end = e["ts_ns"]
            check(r.end >= r.start, "pop after push for %s" % r.name)
        elif k == "nvtx_mark":
            (stacks[key][-1].marks if stacks[key] else top_marks).append(e["name"])
    open_left = sum(len(s) for s in stacks.values())
    return ranges, top_marks, unmatched, open_left


def step_reqs(r):
    """Request ids of a teller.step range: its reqs plus its continuation marks."""
    _, f = parse(r.name)
    out = ids(f.get("reqs", ""))
    for m in r.marks:
        n, mf = parse(m)
        if n == "teller.reqs" and mf.get("seq") == f.get("seq"):
            out += ids(mf.get("reqs", ""))
    check(int(f.get("cont", "0")) == sum(1 for m in r.marks if m.startswith("teller.reqs ")),
          "cont= counts the continuation marks of %s" % r.name[:80])
    return out


def case_vllm(args, tmp):
    out = os.path.join(tmp, "trace")
    p = run_traced(args, "vllm", {}, out)
    check(p.returncode == 3, "exit status 3 passes through (got %d)" % p.returncode)
    check("program done" in p.stdout, "program output passes through")
    check("caught ModelRunnerFailure: injected failure in boom-1" in p.stdout,
          "the hooked function's exception reaches the program unchanged")
    check("step name: step" in p.stdout, "wrapper keeps __name__")
    check("hooked: vllm.v1.engine_step" in p.stdout, "EngineCore.step is wrapped")
    check("chained sitecustomize ran" in p.stdout and "chained: ran" in p.stdout,
          "the program's own sitecustomize still runs")
    check("teller:" not in p.stderr, "no skip lines for optional targets the fake lacks")

    ranges, top_marks, unmatched, open_left = build_ranges(dump(args, out))
    check(unmatched == 0 and open_left == 0, "every push has its pop (unmatched %d, open %d)"
          % (unmatched, open_left))
    names = collections.Counter(parse(r.name)[0] for r in ranges)
    print("ranges: %s" % dict(names))
    # 4 planned steps + the final empty step() call + thread + failing step.
    check(names["teller.engine_step"] == 7, "7 engine steps (got %d)" % names["teller.engine_step"])
    check(names["teller.schedule"] == 6, "6 schedule calls")
    check(names["teller.step"] == 6, "6 execute_model calls")
    check(names["teller.sample"] == 5, "5 sampler calls (the failing step has none)")
    check(names["teller.update_from_output"] == 5, "5 update_from_output calls")
    for r in ranges:
        n = parse(r.name)[0]
        want_parent = {"teller.schedule": "teller.engine_step", "teller.step": "teller.engine_step",
                       "teller.update_from_output": "teller.engine_step",
                       "teller.sample": "teller.step", "teller.engine_step": None}.get(n, "?")
        got = parse(r.parent.name)[0] if r.parent else None
        check(got == want_parent, "%s nests in %s (got %s)" % (n, want_parent, got))
        if r.parent:
            check(r.parent.tid == r.tid and r.parent.start <= r.start and r.end <= r.parent.end,
                  "%s lies inside its parent on the same thread" % n)
    tids = set((r.pid, r.tid) for r in ranges)
    check(len(tids) == 2, "ranges on 2 threads (got %d)" % len(tids))

    steps = [r for r in ranges if parse(r.name)[0] == "teller.step"]
    main_tid = steps[0].tid
    main_steps = [r for r in steps if r.tid == main_tid]
    check(len(main_steps) == 5, "5 steps on the main thread")
    for r, (kind, want, prefill, tokens) in zip(main_steps, EXPECTED_STEPS):
        _, f = parse(r.name)
        got = step_reqs(r)
        check(got == want, "step %s carries exactly its ids (got %d ids, want %d; first %r)"
              % (f.get("seq"), len(got), len(want), got[:3]))
        check(f.get("kind") == kind, "step %s kind %s (got %s)" % (f.get("seq"), kind, f.get("kind")))
        check(f.get("n") == str(len(want)), "step %s n=%d" % (f.get("seq"), len(want)))
        check(f.get("tokens") == str(tokens), "step %s tokens=%d" % (f.get("seq"), tokens))
        if prefill is not None:
            check(ids(f.get("prefill", "")) == prefill, "step %s prefill ids" % f.get("seq"))
        check(len(r.name) <= 4000, "step message within 4000 bytes")
        check(all(0x21 <= ord(c) < 0x7F or c == " " for c in r.name), "message is printable ASCII")
    check(int(parse(main_steps[3].name)[1].get("cont", "0")) >= 1, "300 ids use continuation marks")
    fail = main_steps[4]
    check(step_reqs(fail) == ["boom-1"] and parse(fail.name)[1].get("kind") == "prefill",
          "the failing step's range carries its id and is closed")
    thread_steps = [r for r in steps if r.tid != main_tid]
    check(len(thread_steps) == 1 and step_reqs(thread_steps[0]) == ["thr-1"], "thread step ids")

    # The scheduler's decision is a teller.batch mark inside its teller.schedule range.
    scheds = [r for r in ranges if parse(r.name)[0] == "teller.schedule" and r.tid == main_tid]
    for r, (kind, want, _, _) in zip(scheds, EXPECTED_STEPS):
        batch = [m for m in r.marks if m.startswith("teller.batch ")]
        check(len(batch) == 1, "one teller.batch mark per schedule call")
        if batch:
            _, f = parse(batch[0])
            got = ids(f.get("reqs", ""))
            for m in r.marks:
                n, mf = parse(m)
                if n == "teller.reqs" and mf.get("seq") == f.get("seq"):
                    got += ids(mf.get("reqs", ""))
            check(got == want and f.get("kind") == kind, "schedule mark carries ids and kind")
    check(not top_marks, "no marks outside ranges")


def case_none(args, tmp):
    out = os.path.join(tmp, "trace")
    p = run_traced(args, "none", {}, out)
    check(p.returncode == 3, "exit status passes through with hooks off")
    check("program done" in p.stdout and "hooked: no" in p.stdout, "nothing wrapped with none")
    check("chained: ran" in p.stdout, "the program's sitecustomize runs")
    events = dump(args, out)
    check(not [e for e in events if e.get("domain") == "teller"], "no teller ranges with none")


def case_user_specs(args, tmp):
    out = os.path.join(tmp, "trace")
    spec = os.path.join(HERE, "user_hooks", "user_specs.json")
    p = run_traced(args, "vllm", {"TELLER_HOOK_SPECS": spec, "TELLER_TEST_USER_HOOKS": "1",
                                  "_extra_pp": [os.path.join(HERE, "user_hooks")]}, out)
    check(p.returncode == 3, "exit status passes through")
    for line in ("worked job-1", "worked ?", "worked job-2", "ran 2", "fetched job-3", "program done"):
        check(line in p.stdout, "program prints %r" % line)
    err = [l for l in p.stderr.splitlines() if l.startswith("teller:")]
    print("teller lines: %s" % err)

    def one(prefix):
        n = sum(1 for l in err if l.startswith(prefix))
        check(n == 1, "exactly one line %r (got %d)" % (prefix, n))
    one("teller: hook user.missing skipped: user_mod has no no_such_function")
    one("teller: hook user.never skipped: module user_mod_never_imported was never imported")
    one("teller: hook user.bad skipped: bad spec:")
    one("teller: hook user.work degraded: RuntimeError: no string for you")
    check(len(err) == 4, "no other teller lines")

    ranges, top_marks, unmatched, open_left = build_ranges(dump(args, out))
    check(unmatched == 0 and open_left == 0, "balanced ranges")
    work = [r.name for r in ranges if r.name.startswith("user.work")]
    check(work == ["user.work job=job-1", "user.work", "user.work"],
          "user.work ranges, bare after the degraded call (got %r)" % work)
    run = [r.name for r in ranges if r.name.startswith("user.run")]
    check(len(run) == 1 and ids(parse(run[0])[1].get("reqs", "")) == ["u-1", "u 2"]
          and parse(run[0])[1].get("n") == "2", "user.run carries its ids (got %r)" % run)
    check(names_have(ranges, "teller.step"), "built-in hooks still active beside user specs")


    starts = [e for e in events_of(args, out) if e.get("kind") == "nvtx_start"]
    ends = [e for e in events_of(args, out) if e.get("kind") == "nvtx_end"]
    check(len(starts) == 1 and starts[0]["name"] == "user.fetch job=job-3",
          "the coroutine gets a start/end range (got %r)" % [e["name"] for e in starts])
    check(len(ends) == 1 and starts and ends[0].get("range_id") == starts[0].get("range_id"),
          "its end matches its start")


def events_of(args, out):
    return [e for e in dump(args, out) if e.get("domain") == "teller"]


def case_torch(args, tmp, binding="wrapped"):
    out = os.path.join(tmp, "trace")
    p = run_traced(args, "torch", {"TELLER_TEST_TORCH_BINDING": binding}, out,
                   program="torch_program.py", fake="fake_torch")
    check(p.returncode == 0, "exit status 0")
    check("model says 2" in p.stdout and "all_reduce hooked: True" in p.stdout,
          "module calls work and torch.distributed's re-export is the wrapper")
    # The fake has no torch.overrides: ops cannot be recorded, which is said once; the
    # optional collectives it lacks are not mentioned.
    err = [l for l in p.stderr.splitlines() if l.startswith("teller:")]
    check(err == ["teller: hook torch.module_call: framework ops not recorded: torch.overrides "
                  "has no TorchFunctionMode in this torch version"],
          "exactly the no-ops line on stderr (got %r)" % err)
    ranges, _, unmatched, open_left = build_ranges(dump(args, out))
    check(unmatched == 0 and open_left == 0, "balanced ranges")
    got = [(r.name, r.parent.name if r.parent else None) for r in ranges]
    # No engine spec is active, so the outermost module call is a step (standalone).
    step = "teller.step kind=unknown seq=1"
    model = "teller.module cls=LlamaForCausalLM top=1"
    want = [(step, None),
            (model, step),
            ("teller.module cls=LlamaDecoderLayer", model),
            ("teller.module cls=LlamaDecoderLayer", model),
            ("teller.comm op=all_reduce numel=4096 dtype=fake.float16 async=False", model),
            ("teller.comm op=broadcast numel=8 dtype=fake.float16 src=0 async=False", None),
            ("teller.comm op=barrier async=False", None)]
    check(got == want, "module and collective ranges (got %r)" % got)


def case_torch_direct(args, tmp):
    """torch <= 2.0 binds Module.__call__ to _call_impl when the class is created: the
    hook must rebind it, or the model records nothing."""
    case_torch(args, tmp, binding="direct")


def case_torch_unreached(args, tmp):
    """A Module whose __call__ bypasses the wrapped _call_impl: the program runs as
    before, nothing is recorded for modules, and one line at exit names the hook."""
    out = os.path.join(tmp, "trace")
    p = run_traced(args, "torch", {"TELLER_TEST_TORCH_BINDING": "own"}, out,
                   program="torch_program.py", fake="fake_torch")
    check(p.returncode == 0 and "model says 2" in p.stdout, "the program runs unchanged")
    err = [l for l in p.stderr.splitlines() if l.startswith("teller:")]
    check(err == ["teller: hook torch.module_call never reached: torch.nn.modules.module:"
                  "Module._call_impl was wrapped but no call went through the wrapper, so it "
                  "recorded nothing"], "exactly one never-reached line (got %r)" % err)
    ranges, _, unmatched, open_left = build_ranges(dump(args, out))
    names = [r.name.split(" ")[0] for r in ranges]
    check(names == ["teller.comm"] * 3, "only the collectives are recorded (got %r)" % names)


def names_have(ranges, name):
    return any(parse(r.name)[0] == name for r in ranges)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--teller", required=True)
    ap.add_argument("--source-dir", default=HERE)
    ap.add_argument("--case", required=True, choices=["vllm", "none", "user_specs", "torch", "torch_direct",
                                                   "torch_unreached"])
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="teller-pyhooks-")
    try:
        {"vllm": case_vllm, "none": case_none, "user_specs": case_user_specs,
         "torch": case_torch, "torch_direct": case_torch_direct,
         "torch_unreached": case_torch_unreached}[args.case](args, tmp)
    finally:
        keep_or_remove(tmp)
    return verdict()


if __name__ == "__main__":
    sys.exit(main())
