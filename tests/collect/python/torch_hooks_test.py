#!/usr/bin/python3
"""End to end on real PyTorch (Debian's python3-torch): torch_generate.py's tiny
transformer under `teller run --python-hooks torch`, its trace read back with `teller
dump`, then `teller diagnose`. Exits 77 (ctest SKIP_RETURN_CODE) when /usr/bin/python3
cannot import torch.

usage: torch_hooks_test.py --teller PATH

Expected counts come from the arguments passed to the program and from the calls its
forward methods make (counted by hand in torch_generate.py), not from a run:
  steps          S                      one outermost model call per generated token
  model ranges   S, one in each step
  layer ranges   S x L, L in each model range
  ops per layer  6 linear (q k v o up down), 2 layer_norm, 1 gelu, 1 softmax, 2 matmul
  ops per model  1 embedding, 1 layer_norm, 1 linear (lm_head) outside the layers
The loop's own argmax and cat run outside the model, where no op is recorded.
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import python_hooks_test as h  # noqa: E402  (run_traced, dump, build_ranges, check)

LAYERS = 3
STEPS = 4
THREADS = 2  # extra threads, each running the whole loop again
MODEL = "teller.module cls=TinyForCausalLM top=1"
LAYER = "teller.module cls=TinyDecoderLayer"
OPS_PER_LAYER = {"torch.nn.functional.linear": 6, "torch.nn.functional.layer_norm": 2,
                 "torch.nn.functional.gelu": 1, "torch.nn.functional.softmax": 1,
                 "torch.matmul": 2}
OPS_OUTSIDE_LAYERS = {"torch.nn.functional.embedding": 1, "torch.nn.functional.layer_norm": 1,
                      "torch.nn.functional.linear": 1}
check = h.check


def op_name(r):
    name, fields = h.parse(r.name)
    return fields.get("fn") if name == "teller.op" else None


def descendants(r):
    for c in r.children:
        yield c
        for d in descendants(c):
            yield d


def check_thread(ranges, where):
    """The ranges of one thread that ran the whole generate loop once."""
    tops = [r for r in ranges if r.parent is None]
    steps = [r for r in tops if h.parse(r.name)[0] == "teller.step"]
    check(len(steps) == STEPS and len(tops) == STEPS,
          "%s: %d top-level ranges, all steps (got %d steps of %d)" % (where, STEPS, len(steps),
                                                                       len(tops)))
    seqs = [h.parse(s.name)[1].get("seq") for s in steps]
    check(all(s is not None and s.isdigit() for s in seqs) and len(set(seqs)) == len(seqs),
          "%s: each step has its own seq (got %r)" % (where, seqs))
    models = [r for r in ranges if r.name == MODEL]
    layers = [r for r in ranges if r.name == LAYER]
    check(len(models) == STEPS, "%s: %d model calls (got %d)" % (where, STEPS, len(models)))
    check(len(layers) == STEPS * LAYERS,
          "%s: %d decoder-layer calls (got %d)" % (where, STEPS * LAYERS, len(layers)))
    for s in steps:
        check([c.name for c in s.children] == [MODEL], "%s: a step holds exactly the model call"
              % where)
    for m in models:
        kids = [c.name for c in m.children if c.name == LAYER]
        check(len(kids) == LAYERS, "%s: %d layers inside each model call (got %d)"
              % (where, LAYERS, len(kids)))
        outside = collections.Counter(op_name(c) for c in m.children if op_name(c))
        check(outside == collections.Counter(OPS_OUTSIDE_LAYERS),
              "%s: ops of the model outside its layers (got %r)" % (where, dict(outside)))
    for layer in layers:
        ops = collections.Counter(op_name(d) for d in descendants(layer) if op_name(d))
        for fn, n in OPS_PER_LAYER.items():
            check(ops[fn] == n, "%s: %d x %s inside each layer (got %d)" % (where, n, fn, ops[fn]))
    for r in ranges:
        fn = op_name(r)
        if fn is None:
            continue
        check(not r.children, "%s: op %s is a leaf (an API call's inner calls are not seen)"
              % (where, fn))
        anc = r.parent
        while anc is not None and anc.name != MODEL:
            anc = anc.parent
        check(anc is not None, "%s: op %s lies inside a model call" % (where, fn))
        check(not fn.endswith(".__get__"), "%s: property reads are not ops (%s)" % (where, fn))
    check(not [r for r in ranges if op_name(r) in ("torch.argmax", "torch.cat")],
          "%s: the loop's argmax/cat outside the model have no ranges" % where)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--teller", required=True)
    args = ap.parse_args()
    # A path lookup only: importing torch here would cost seconds more.
    probe = subprocess.run(["/usr/bin/python3", "-c", "import importlib.util, sys; "
                            "sys.exit(importlib.util.find_spec('torch') is None)"])
    if probe.returncode != 0:
        print("SKIP: /usr/bin/python3 has no torch (Debian's python3-torch; tools/setup.sh "
              "installs it)")
        return 77
    tmp = tempfile.mkdtemp(prefix="teller-torch-")
    prog = ["--layers", str(LAYERS), "--steps", str(STEPS), "--threads", str(THREADS)]
    try:
        out = os.path.join(tmp, "trace")
        # The untraced reference runs meanwhile: most of each run is importing torch.
        plain = subprocess.Popen(["/usr/bin/python3", os.path.join(HERE, "torch_generate.py")] +
                                 prog, stdout=subprocess.PIPE, universal_newlines=True,
                                 env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
        p = h.run_traced(args, "torch", {}, out, program="torch_generate.py", fake=None,
                         prog_args=prog)
        plain_out = plain.communicate(timeout=120)[0]
        check(p.returncode == 0, "exit status 0 (got %d)" % p.returncode)
        gen = [l for l in p.stdout.splitlines() if l.startswith("generated ")]
        check(gen and gen == [l for l in plain_out.splitlines() if l.startswith("generated ")],
              "the traced program generates what the untraced one does (%r)" % gen)
        check("threads agree: True" in p.stdout, "every thread generates the same tokens")
        err = [l for l in p.stderr.splitlines() if l.startswith("teller:")]
        check(not err, "no teller lines on stderr (got %r)" % err)

        ranges, top_marks, unmatched, open_left = h.build_ranges(h.dump(args, out))
        check(unmatched == 0 and open_left == 0,
              "every push has its pop (unmatched %d, open %d)" % (unmatched, open_left))
        by_thread = collections.defaultdict(list)
        for r in ranges:
            by_thread[(r.pid, r.tid)].append(r)
        check(len(by_thread) == 1 + THREADS, "ranges on %d threads (got %d)"
              % (1 + THREADS, len(by_thread)))
        for i, (key, rs) in enumerate(sorted(by_thread.items(), key=lambda kv: kv[1][0].start)):
            check_thread(rs, "thread %d" % i)

        report = os.path.join(tmp, "diagnosis.json")
        d = subprocess.run([args.teller, "diagnose", out, "--json", report],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=120)
        print("$ teller diagnose\n" + d.stdout + d.stderr)
        check(d.returncode == 0, "teller diagnose exits 0 (got %d)" % d.returncode)
        if d.returncode == 0:
            with open(report) as f:
                rep = json.load(f)
            want = STEPS * (1 + THREADS)
            check(rep.get("steps_total") == want,
                  "diagnose finds %d steps (got %r)" % (want, rep.get("steps_total")))
            check(len(rep.get("steps", [])) == want and
                  all(s.get("kind") == "unknown" for s in rep.get("steps", [])),
                  "every step listed, of kind unknown (a plain program states no batch)")
    finally:
        h.keep_or_remove(tmp)
    return h.verdict()


if __name__ == "__main__":
    sys.exit(main())
