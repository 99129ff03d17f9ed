#!/usr/bin/python3
"""Unit tests of teller_hooks that need no teller binary: message grammar, attribute
paths, batch kinds, spec validation, and sitecustomize chaining without recursion.

usage: hooks_unit_test.py --package-dir <src/collect/python>
"""
import argparse
import os
import subprocess
import sys
import tempfile
import unittest

PKG = None


class MessageTest(unittest.TestCase):
    def test_escape_round_trip(self):
        from teller_hooks import _message
        for s in ["cmpl-1", "a b", "x,y=z%", "\u00e9\u4e2d", "", "tab\there"]:
            e = _message.escape(s)
            self.assertTrue(all(0x21 <= ord(c) < 0x7F for c in e), e)
            self.assertNotIn(",", e)
            self.assertEqual(_message.unescape(e), s)
        self.assertEqual(_message.escape("chatcmpl-a269fdcb"), "chatcmpl-a269fdcb")

    def test_long_id_lists_continue_in_marks(self):
        from teller_hooks import _message
        ids = ["id-%05d" % i for i in range(2000)]
        msg, conts = _message.build("teller.step", [("seq", "7"), ("n", "2000")], ids,
                                    cont_fields=(("seq", "7"),))
        self.assertLessEqual(len(msg), _message.DEFAULT_LIMIT)
        name, fields = _message.parse(msg)
        self.assertEqual(int(fields["cont"]), len(conts))
        got = fields["reqs"].split(",")
        for c in conts:
            self.assertLessEqual(len(c), _message.DEFAULT_LIMIT)
            n, f = _message.parse(c)
            self.assertEqual((n, f["seq"]), ("teller.reqs", "7"))
            got += f["reqs"].split(",")
        self.assertEqual(got, ids)

    def test_valid_head(self):
        from teller_hooks import _message
        self.assertTrue(_message.valid_head("teller.comm op=all_reduce"))
        self.assertFalse(_message.valid_head("two words"))
        self.assertFalse(_message.valid_head("x k=a,b"))


class PathTest(unittest.TestCase):
    def test_paths(self):
        from teller_hooks import _paths

        class R(object):
            def __init__(self, rid, p):
                self.rid, self.is_prompt = rid, p

        class B(object):
            reqs = [R("a", True), R("b", False)]
            tokens = {"a": 3, "b": 1}

        def f(self, batch, extra=None):
            pass
        binder = _paths.Binder(f)
        args = (None, B())
        ev = lambda t, ret=None: _paths.evaluate(_paths.Path(t), binder.root(
            _paths.Path(t).root, args, {}, ret))
        self.assertEqual(ev("batch.reqs[*].rid"), (True, ["a", "b"]))
        self.assertEqual(ev("batch.reqs[?is_prompt].rid"), (True, ["a"]))
        self.assertEqual(ev("batch.tokens[*]"), (True, ["a", "b"]))
        self.assertEqual(ev("batch.tokens.b"), (True, [1]))
        self.assertEqual(ev("batch.reqs[-1].rid"), (True, ["b"]))
        self.assertEqual(ev("@1.reqs[0].rid"), (True, ["a"]))
        self.assertEqual(ev("batch.nothing[*].rid"), (False, []))
        self.assertEqual(ev("return[*]", ret=[]), (True, []))
        self.assertEqual(ev("return.bit_length()", ret=8), (True, [4]))
        self.assertEqual(ev("extra"), (True, [None]))
        with self.assertRaises(_paths.PathError):
            _paths.Path("batch..x")


class SpecTest(unittest.TestCase):
    def test_builtin_specs_load_cleanly(self):
        from teller_hooks import _spec
        for n in ("vllm", "sglang", "torch"):
            sf = _spec.load(os.path.join(PKG, "teller_hooks", "specs", n + ".json"))
            self.assertEqual(sf.errors, [], n)
            self.assertTrue(sf.hooks, n)

    def test_bad_hooks_are_listed_not_fatal(self):
        from teller_hooks import _spec
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            f.write('{"format": "teller-hooks/1", "hooks": ['
                    '{"name": "ok", "module": "m", "target": "f"},'
                    '{"name": "bad", "module": "m", "target": "f", "batch": {"reqs": ["x..y"]}},'
                    '{"name": "mixed", "module": "m", "target": "f",'
                    ' "batch": {"reqs": ["return[*]"], "tokens": "a.b"}}]}')
        try:
            sf = _spec.load(f.name)
        finally:
            os.unlink(f.name)
        self.assertEqual([h.name for h in sf.hooks], ["ok"])
        self.assertEqual([e[0] for e in sf.errors], ["bad", "mixed"])


class RecordingShim(object):
    def __init__(self):
        self.calls = []

    def push(self, msg):
        self.calls.append(("push", msg.decode("ascii")))

    def pop(self):
        self.calls.append(("pop",))


def fake_torch_module(binding):
    """A module namespace with torch's Module in one of its calling conventions."""
    import types
    m = types.ModuleType("torch.nn.modules.module")

    class Module(object):
        def _wrapped_call_impl(self, *args, **kwargs):
            return self._call_impl(*args, **kwargs)

        def _call_impl(self, *args, **kwargs):
            return self.forward(*args, **kwargs)

        if binding == "direct":  # torch 1.x and 2.0
            __call__ = _call_impl
        elif binding == "wrapped":  # torch >= 2.1
            __call__ = _wrapped_call_impl
        else:  # a body of its own that bypasses _call_impl
            def __call__(self, *args, **kwargs):
                return self.forward(*args, **kwargs)
    m.Module = Module
    return m


class BindingTest(unittest.TestCase):
    def module_call_hook(self):
        from teller_hooks import _spec
        sf = _spec.load(os.path.join(PKG, "teller_hooks", "specs", "torch.json"))
        return [h for h in sf.hooks if h.name == "torch.module_call"][0]

    def run_model(self, binding, extra_hooks=(), explicit=True):
        import teller_hooks
        hook = self.module_call_hook()
        shim = RecordingShim()
        inst = teller_hooks._Installer(shim, [hook] + list(extra_hooks), [], explicit)
        m = fake_torch_module(binding)
        inst.apply(hook, m)

        class LlamaDecoderLayer(m.Module):
            def forward(self, x):
                return x + 1

        class Net(m.Module):
            def __init__(self):
                self.layers = [LlamaDecoderLayer(), LlamaDecoderLayer()]

            def forward(self, x):
                for layer in self.layers:
                    x = layer(x)
                return x
        self.assertEqual(Net()(1), 3)  # the program's result is unchanged
        return inst, shim.calls, m

    def test_both_torch_bindings_reach_the_wrapper(self):
        want = [("push", "teller.step kind=unknown seq=1"), ("push", "teller.module cls=Net top=1"),
                ("push", "teller.module cls=LlamaDecoderLayer"), ("pop",),
                ("push", "teller.module cls=LlamaDecoderLayer"), ("pop",), ("pop",), ("pop",)]
        for binding in ("direct", "wrapped"):
            inst, calls, m = self.run_model(binding)
            self.assertEqual(calls, want, binding)
            self.assertTrue(inst.watched[0][1].reached[0], binding)
        # The class-level alias is rebound only where the class made one.
        _, _, m = self.run_model("direct")
        self.assertIs(m.Module.__dict__["__call__"], m.Module.__dict__["_call_impl"])
        _, _, m = self.run_model("wrapped")
        self.assertIsNot(m.Module.__dict__["__call__"], m.Module.__dict__["_call_impl"])

    def test_engine_steps_turn_standalone_ranges_off(self):
        from teller_hooks import _spec
        sf = _spec.load(os.path.join(PKG, "teller_hooks", "specs", "vllm.json"))
        _, calls, _ = self.run_model("wrapped", extra_hooks=sf.hooks)
        self.assertEqual(calls[0], ("push", "teller.module cls=Net top=1"))
        self.assertEqual(len(calls), 6)  # model + two layers, no step

    def test_bypassed_wrapper_is_reported_once_at_exit(self):
        import io
        from teller_hooks import _report
        inst, calls, _ = self.run_model("own")
        self.assertEqual(calls, [])
        err, sys.stderr = sys.stderr, io.StringIO()
        try:
            _report._said.discard(("unreached", "torch.module_call"))
            inst.report_unreached()
            inst.report_unreached()
            text = sys.stderr.getvalue()
        finally:
            sys.stderr = err
        self.assertEqual(text, "teller: hook torch.module_call never reached: "
                         "torch.nn.modules.module:Module._call_impl was wrapped but no call went "
                         "through the wrapper, so it recorded nothing\n")

    def test_auto_mode_does_not_watch_built_in_hooks(self):
        inst, calls, _ = self.run_model("own", explicit=False)
        self.assertEqual((calls, inst.watched), ([], []))

    def test_multiprocessing_servers_are_recognised(self):
        import teller_hooks
        saved = getattr(sys, "orig_argv", None)
        try:
            for argv, want in (
                    (["python3", "-c", "from multiprocessing.resource_tracker import main;main(5)"], True),
                    (["python3", "-c", "from multiprocessing.forkserver import main; main(3, 4)"], True),
                    (["python3", "-c", "from multiprocessing.spawn import spawn_main; spawn_main()"], False),
                    (["python3", "app.py"], False)):
                sys.orig_argv = argv
                self.assertEqual(teller_hooks._multiprocessing_helper(), want, argv)
        finally:
            if saved is None:
                del sys.orig_argv
            else:
                sys.orig_argv = saved

    def test_spec_checks_standalone_and_warn_unreached(self):
        from teller_hooks import _spec
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            f.write('{"format": "teller-hooks/1", "hooks": ['
                    '{"name": "a", "module": "m", "target": "C.f", "mode": "module_call",'
                    ' "module_call": {"standalone": {"step": "two words"}}},'
                    '{"name": "b", "module": "m", "target": "f", "warn_unreached": "yes"},'
                    '{"name": "c", "module": "m", "target": "C.f", "mode": "module_call",'
                    ' "module_call": {"standalone": {"ops": "teller.op", "ops_skip": "("}}},'
                    '{"name": "d", "module": "m", "target": "f", "warn_unreached": false}]}')
        try:
            sf = _spec.load(f.name)
        finally:
            os.unlink(f.name)
        self.assertEqual([h.name for h in sf.hooks], ["d"])
        self.assertIs(sf.hooks[0].warn_unreached, False)
        self.assertEqual([e[0] for e in sf.errors], ["a", "b", "c"])


class KindTest(unittest.TestCase):
    def test_vllm_v1_kinds(self):
        from teller_hooks import _batch, _paths, _spec

        class New(object):
            def __init__(self, r):
                self.req_id = r

        class Out(object):
            def __init__(self, new, tokens, spec=None):
                self.scheduled_new_reqs = [New(r) for r in new]
                self.num_scheduled_tokens = tokens
                self.total_num_scheduled_tokens = sum(tokens.values())
                self.scheduled_spec_decode_tokens = spec or {}
        sf = _spec.load(os.path.join(PKG, "teller_hooks", "specs", "vllm.json"))
        hook = [h for h in sf.hooks if h.name == "vllm.v1.execute_model"][0]

        def fn(self, scheduler_output):
            pass
        binder = _paths.Binder(fn)

        def kind(out):
            pairs, ids, _ = _batch.fields(hook.batch, 1, binder, (None, out), {}, None)
            return dict(pairs)["kind"]
        self.assertEqual(kind(Out(["a"], {"a": 9})), "prefill")
        self.assertEqual(kind(Out([], {"a": 1, "b": 1})), "decode")
        self.assertEqual(kind(Out([], {"a": 1, "b": 64})), "mixed")  # chunked prefill
        self.assertEqual(kind(Out([], {"a": 3}, {"a": [1, 2]})), "decode")  # spec decode
        self.assertEqual(kind(Out([], {})), "idle")


class SiteTest(unittest.TestCase):
    def test_chaining_runs_next_once_and_never_recurses(self):
        d = tempfile.mkdtemp()
        with open(os.path.join(d, "sitecustomize.py"), "w") as f:
            f.write("import sys\nsys.stdout.write('next site\\n')\n")
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        env.pop("TELLER_PYTHON_HOOKS", None)
        # Our directory twice (as two spellings) in front of the user's.
        env["PYTHONPATH"] = os.pathsep.join([PKG, PKG + "/.", d])
        p = subprocess.run([sys.executable, "-c", "import sitecustomize as s; print(s.__file__)"],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertEqual(lines.count("next site"), 1, p.stdout)
        self.assertTrue(lines[-1].startswith(PKG), p.stdout)  # ours stays the registered one

    def test_hooks_without_nvtx_tool_wrap_nothing(self):
        env = dict(os.environ, TELLER_PYTHON_HOOKS="auto", TELLER_NVTX_SHIM="/nonexistent.so",
               PYTHONDONTWRITEBYTECODE="1")
        env.pop("NVTX_INJECTION64_PATH", None)
        env["PYTHONPATH"] = PKG
        p = subprocess.run([sys.executable, "-c", "print('ok')"], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
        self.assertEqual((p.returncode, p.stdout), (0, "ok\n"))
        self.assertEqual(p.stderr.count("\n"), 1, p.stderr)
        self.assertIn("teller: python hooks disabled:", p.stderr)


def main():
    global PKG
    ap = argparse.ArgumentParser()
    ap.add_argument("--package-dir", required=True)
    args, rest = ap.parse_known_args()
    PKG = os.path.realpath(args.package_dir)
    sys.path.insert(0, PKG)
    sys.dont_write_bytecode = True  # keep __pycache__ out of the source tree
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
