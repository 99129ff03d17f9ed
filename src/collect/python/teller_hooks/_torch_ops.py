"""Framework-op ranges for plain PyTorch programs, without the profiler.

torch.overrides.TorchFunctionMode (torch >= 1.12, unchanged in 2.x) sees every call of
the torch API that honours __torch_function__: torch.* functions, torch.nn.functional,
Tensor methods and operators. A mode is pushed only around the outermost module call
of a thread (the model), so ops outside the model cost nothing. Inside the handler
torch pops the mode, so the ops a function calls internally (F.layer_norm calling
torch.layer_norm) are not seen twice: one range per API call the model's code makes.

Why not the alternatives: torch.autograd.profiler.emit_nvtx needs a CUDA build (the CPU
build's profiler stubs fail on NVTX), and a TorchDispatchMode sits below autograd with
semantics that changed between 1.13 and 2.x. The mode stack is thread-local, which is
why the mode is entered per outermost call rather than once at start-up.
"""
import sys

from . import _message
from . import _report

_MAX_NAMES = 4096  # distinct callables named; beyond that, names are built per call


def make_mode(shim, head, skip, hook_name):
    """Returns a TorchFunctionMode instance that records `head fn=<name>` around each
    torch call whose resolved name `skip` does not match, or None (reported once) when
    this torch has no function modes."""
    overrides = sys.modules.get("torch.overrides")
    base = getattr(overrides, "TorchFunctionMode", None)
    if base is None:
        _report.say_once(("ops", hook_name),
                         "teller: hook %s: framework ops not recorded: torch.overrides has no "
                         "TorchFunctionMode in this torch version" % hook_name)
        return None
    resolve = getattr(overrides, "resolve_name", None)
    names = {}

    def message(func):
        try:
            name = resolve(func) if resolve is not None else None
        except Exception:
            name = None
        if not name:
            owner = getattr(func, "__module__", None) or "torch"
            name = "%s.%s" % (owner, getattr(func, "__qualname__", None) or
                              getattr(func, "__name__", "?"))
        if skip.search(name):
            return False
        return ("%s fn=%s" % (head, _message.escape(name))).encode("ascii")

    class OpRanges(base):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            if kwargs is None:
                kwargs = {}
            pushed = False
            try:
                msg = names.get(func)
                if msg is None:
                    msg = message(func)
                    if len(names) < _MAX_NAMES:
                        names[func] = msg
                if msg:
                    shim.push(msg)
                    pushed = True
            except Exception:  # an unhashable callable, a failing __repr__: no range
                pass
            try:
                return func(*args, **kwargs)
            finally:
                if pushed:
                    try:
                        shim.pop()
                    except Exception:
                        pass

    return OpRanges()
