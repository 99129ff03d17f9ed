"""Wrappers that put an NVTX range (or mark) around a target function.

Invariants, whatever happens inside our own code:
  * the wrapped function is called exactly once with the caller's arguments, and its
    return value or exception reaches the caller unchanged;
  * a pushed range is popped on the same thread (try/finally), so NVTX stacks never
    drift even when the function raises;
  * an exception in our code (building a message, calling the shim) is swallowed, and
    reported once per hook (_report.degraded).
"""
import functools
import inspect
import itertools
import sys
import threading

from . import _batch
from . import _message
from . import _paths
from . import _report
from . import _torch_ops


class _Compiling(object):
    """torch.compile (dynamo) traces Python code; a ctypes call inside a traced function
    would break the graph. Wrappers with skip_when_compiling ask torch whether it is
    tracing and then call straight through. Looked up lazily: importing torch ourselves
    is exactly what the hooks must not do."""

    fn = None

    @classmethod
    def now(cls):
        f = cls.fn
        if f is None:
            comp = sys.modules.get("torch.compiler")
            f = getattr(comp, "is_compiling", None) if comp is not None else None
            if f is None:
                dyn = sys.modules.get("torch._dynamo")
                f = getattr(dyn, "is_compiling", None) if dyn is not None else None
            if f is None:
                return False  # no compiler loaded yet, so nothing is being traced
            cls.fn = f
        return f()


def _message_builder(hook, binder):
    """Returns build(args, kwargs) -> (message bytes, continuation marks) for the
    call-time message of a range, or None when the message is constant."""
    batch = hook.batch if hook.batch is not None and not hook.batch.from_return else None
    if batch is None and not hook.fields:
        return None
    counter = itertools.count(1)
    head = hook.range

    def build(args, kwargs):
        seq = next(counter)  # atomic under the GIL
        pairs = []
        ids = None
        if batch is not None:
            pairs, ids, _ = _batch.fields(batch, seq, binder, args, kwargs, None)
        for key, path in hook.fields:
            found, values = _paths.evaluate(path, binder.root(path.root, args, kwargs, None))
            if values:
                pairs.append((key, ",".join(_message.escape(v) for v in values)))
        msg, conts = _message.build(head, pairs, ids, cont_fields=(("seq", str(seq)),)
                                    if batch is not None else ())
        return msg.encode("ascii"), [c.encode("ascii") for c in conts]

    return build


def _result_marker(hook, binder):
    """Returns mark(args, kwargs, ret) -> list of mark messages, for batches that are
    only known from the return value (a scheduler's decision)."""
    batch = hook.batch if hook.batch is not None and hook.batch.from_return else None
    if batch is None:
        return None
    counter = itertools.count(1)

    def marks(args, kwargs, ret):
        seq = next(counter)
        pairs, ids, empty = _batch.fields(batch, seq, binder, args, kwargs, ret)
        if empty and batch.skip_empty:
            return []
        msg, conts = _message.build(batch.mark, pairs, ids, cont_fields=(("seq", str(seq)),))
        return [msg.encode("ascii")] + [c.encode("ascii") for c in conts]

    return marks


class Context(object):
    """What a wrapper needs beyond its hook: `reached` is set by the wrapper's first call
    (read at exit for the "never reached" line); `standalone` says that no active hook
    records engine steps, so a module_call hook may add its standalone ranges."""

    def __init__(self, standalone=False):
        self.reached = [False]
        self.standalone = standalone


def make_function_wrapper(hook, fn, shim, ctx):
    """The wrapper for mode range or mark. Coroutine functions get start/end ranges,
    because their bodies interleave on one thread across awaits and would corrupt the
    thread's push/pop stack."""
    binder = _paths.Binder(fn)
    build = _message_builder(hook, binder)
    marker = _result_marker(hook, binder)
    static = hook.range.encode("ascii")
    name = hook.name
    compiling = _Compiling.now if hook.skip_when_compiling else None
    want_range = hook.mode != "mark"
    state = {"build": build, "marker": marker}
    reached = ctx.reached

    def begin(args, kwargs):
        b = state["build"]
        if b is None:
            return static, ()
        try:
            return b(args, kwargs)
        except Exception as e:
            state["build"] = None  # fall back to the bare name from now on
            _report.degraded(name, "%s: %s" % (type(e).__name__, e))
            return static, ()

    def finish(args, kwargs, ret):
        m = state["marker"]
        if m is None:
            return
        try:
            for msg in m(args, kwargs, ret):
                shim.mark(msg)
        except Exception as e:
            state["marker"] = None
            _report.degraded(name, "%s: %s" % (type(e).__name__, e))

    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def async_wrapper(*args, **kwargs):
            if compiling is not None and compiling():
                return await fn(*args, **kwargs)
            reached[0] = True
            rid = None
            try:
                if want_range:
                    msg, conts = begin(args, kwargs)
                    rid = shim.start(msg)
                    for c in conts:
                        shim.mark(c)
            except Exception:
                rid = None
            try:
                ret = await fn(*args, **kwargs)
                finish(args, kwargs, ret)
                return ret
            finally:
                if rid is not None:
                    try:
                        shim.end(rid)
                    except Exception:
                        pass
        wrapper = async_wrapper
    else:
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if compiling is not None and compiling():
                return fn(*args, **kwargs)
            reached[0] = True
            pushed = False
            if want_range:
                try:
                    msg, conts = begin(args, kwargs)
                    shim.push(msg)
                    pushed = True
                    for c in conts:
                        shim.mark(c)
                except Exception:
                    pass
            try:
                ret = fn(*args, **kwargs)
                finish(args, kwargs, ret)
                return ret
            finally:
                if pushed:
                    try:
                        shim.pop()
                    except Exception:
                        pass
    wrapper.__teller_hook__ = hook.name
    return wrapper


def make_module_call_wrapper(hook, fn, shim, ctx):
    """The wrapper for torch.nn.Module._call_impl (mode module_call).

    Every module call passes through it, so the per-call cost is one cache lookup by
    class and, with top_level, a thread-local depth count. A range is recorded for a
    module whose class name matches class_regex, and (top_level) for the outermost
    module call of a thread: the model, whatever its class. In a standalone program
    (ctx.standalone and the hook has "standalone"), the outermost call is also wrapped
    in a step range and runs with a torch function mode that records the ops."""
    regex = hook.class_regex
    top_level = hook.top_level
    head = hook.range
    cache = {}
    tls = threading.local()
    compiling = _Compiling.now if hook.skip_when_compiling else None
    name = hook.name
    reached = ctx.reached
    alone = hook.standalone if ctx.standalone and top_level else None
    step_head = alone.step if alone is not None else None
    step_seq = itertools.count(1)
    # The op mode is made at the first outermost call: torch.overrides is imported by
    # then, while it is not yet when torch.nn.modules.module is (and we wrap it).
    ops = {"want": alone is not None and alone.ops is not None, "mode": None}

    def op_mode():
        if ops["want"]:
            ops["want"] = False
            try:
                ops["mode"] = _torch_ops.make_mode(shim, alone.ops, alone.ops_skip, name)
            except Exception as e:
                _report.degraded(name, "framework ops: %s: %s" % (type(e).__name__, e))
        return ops["mode"]

    def messages(cls):
        try:
            cname = _message.escape(getattr(cls, "__name__", "?"))
            inner = ("%s cls=%s" % (head, cname)).encode("ascii")
            top = ("%s cls=%s top=1" % (head, cname)).encode("ascii")
            # torch.compile's wrapper module: the mode must not be active while dynamo
            # traces the model inside it.
            eager = not str(getattr(cls, "__module__", "")).startswith("torch._dynamo")
            m = (inner if regex.search(cls.__name__) else None, top if top_level else None, eager)
        except Exception as e:
            _report.degraded(name, "%s: %s" % (type(e).__name__, e))
            m = (None, None, False)
        cache[cls] = m
        return m

    @functools.wraps(fn)
    def _call_impl(self, *args, **kwargs):
        if compiling is not None and compiling():
            return fn(self, *args, **kwargs)
        reached[0] = True
        pushed = 0
        entered = False
        depth = 0
        mode = None
        try:
            m = cache.get(type(self))
            if m is None:
                m = messages(type(self))
            msg = m[0]
            if top_level:
                depth = getattr(tls, "depth", 0)
                tls.depth = depth + 1
                entered = True
                if depth == 0:
                    msg = m[1]
                    if alone is not None:
                        if step_head is not None:
                            shim.push(("%s seq=%d" % (step_head, next(step_seq))).encode("ascii"))
                            pushed += 1
                        if m[2]:
                            mode = op_mode()
            if msg is not None:
                shim.push(msg)
                pushed += 1
            if mode is not None:
                mode.__enter__()
        except Exception:
            mode = None
        try:
            return fn(self, *args, **kwargs)
        finally:
            if mode is not None:
                try:
                    mode.__exit__(None, None, None)
                except Exception:
                    pass
            if entered:
                tls.depth = depth
            while pushed:
                pushed -= 1
                try:
                    shim.pop()
                except Exception:
                    pass
    _call_impl.__teller_hook__ = hook.name
    return _call_impl
