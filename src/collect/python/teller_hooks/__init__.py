"""Teller's import-time hooks for Python inference engines.

sitecustomize.py calls install() when TELLER_PYTHON_HOOKS is set (by `teller run
--python-hooks MODE`). install() reads the JSON hook specs for the mode (plus any in
TELLER_HOOK_SPECS), loads libteller_nvtx_shim.so (TELLER_NVTX_SHIM) and registers a
post-import finder; each target is wrapped when its module is imported, never before.
See docs/python-hooks.md.

Environment:
  TELLER_PYTHON_HOOKS  auto | none | a comma list of spec names (vllm, sglang, torch)
  TELLER_NVTX_SHIM     absolute path of libteller_nvtx_shim.so
  TELLER_HOOK_SPECS    extra spec files, separated by os.pathsep (':')
"""
import atexit
import os
import sys

from . import _importer
from . import _nvtx
from . import _report
from . import _spec
from . import _wrap

__all__ = ["install", "installed_hooks"]

BUILTIN_SPECS = ("vllm", "sglang", "torch")
_SPEC_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "specs")

_NONE = object()
_state = {"installed": False, "applied": {}, "finder": None}


def installed_hooks():
    """Names of the hooks applied so far in this process, with their targets."""
    return dict(_state["applied"])


def _spec_paths(mode):
    """Built-in spec files for a mode, then the user's."""
    names = []
    for part in mode.split(","):
        part = part.strip()
        if part == "auto":
            names.extend(BUILTIN_SPECS)
        elif part and part != "none":
            names.append(part)
    paths = []
    for n in names:
        p = os.path.join(_SPEC_DIR, n + ".json")
        if not os.path.isfile(p):
            _report.skipped(n, "no built-in spec named %s (have: %s)" % (n, ", ".join(BUILTIN_SPECS)))
            continue
        if p not in paths:
            paths.append(p)
    user = [p for p in os.environ.get("TELLER_HOOK_SPECS", "").split(os.pathsep) if p]
    return names, paths, user


def _resolve(module, target):
    """Returns (owner, attribute name, raw descriptor, owning class or None)."""
    parts = target.split(".")
    owner = module
    for p in parts[:-1]:
        owner = getattr(owner, p, _NONE)
        if owner is _NONE:
            raise AttributeError(p)
    attr = parts[-1]
    if isinstance(owner, type):
        for klass in owner.__mro__:
            if attr in vars(klass):
                return owner, attr, vars(klass)[attr], owner
        raise AttributeError(attr)
    raw = getattr(owner, attr, _NONE)
    if raw is _NONE:
        raise AttributeError(attr)
    return owner, attr, raw, None


def _wrap_descriptor(hook, raw, shim, ctx):
    """Wraps a function, staticmethod or classmethod; returns the replacement."""
    make = _wrap.make_module_call_wrapper if hook.mode == "module_call" else _wrap.make_function_wrapper
    if isinstance(raw, staticmethod):
        fn = raw.__func__
        if getattr(fn, "__teller_hook__", None):
            return None
        return staticmethod(make(hook, fn, shim, ctx))
    if isinstance(raw, classmethod):
        fn = raw.__func__
        if getattr(fn, "__teller_hook__", None):
            return None
        return classmethod(make(hook, fn, shim, ctx))
    if getattr(raw, "__teller_hook__", None):
        return None  # already wrapped (a second spec, or a re-run of sitecustomize)
    import inspect
    if inspect.isgeneratorfunction(raw) or inspect.isasyncgenfunction(raw):
        raise TypeError("generator functions are not wrapped (the range would end before the work)")
    if not callable(raw):
        raise TypeError("%s is a %s, not a function" % (hook.target, type(raw).__name__))
    return make(hook, raw, shim, ctx)


def _class_aliases(owner, attr, raw):
    """Other names in the class's own namespace bound to the same object as `attr`.

    A class body that says `__call__ = _call_impl` (torch <= 2.0's Module) binds the
    function object once, when the class is created: replacing `_call_impl` afterwards
    leaves `__call__` on the original, so instances never reach the wrapper. torch >= 2.1
    binds `__call__ = _wrapped_call_impl`, which looks `self._call_impl` up at each call
    and needs nothing more. Rebinding every same-object name covers both."""
    try:
        return [k for k, v in list(vars(owner).items()) if v is raw and k != attr]
    except Exception:
        return []


class _Installer(object):
    def __init__(self, shim, hooks, user_hooks, explicit=True):
        self.shim = shim
        self.by_module = {}
        self.originals = {}  # hook name -> (original function, wrapper) for aliases
        self.user_hooks = user_hooks
        user = set(id(h) for h in user_hooks)
        # Steps come from the engine when any active hook records them; otherwise a
        # module_call hook's standalone ranges (steps, ops) apply.
        self.standalone = not any(h.range.split(" ")[0] == "teller.step" for h in hooks)
        self.watched = []  # (hook, context, where) of wrappers that must be reached
        # A user hook names a function the user expects to run. A built-in one warns only
        # when its spec says so and the mode named the spec: under auto, most processes
        # of an engine (an API server importing torch) never call most targets.
        self.warn = {}
        for h in hooks:
            if id(h) in user:
                self.warn[h.name] = h.warn_unreached is not False
            else:
                self.warn[h.name] = bool(h.warn_unreached) and explicit
        for h in hooks:
            self.by_module.setdefault(h.module, []).append(("target", h))
            for a in h.aliases:
                self.by_module.setdefault(a, []).append(("alias", h))

    def on_loaded(self, module):
        for role, hook in self.by_module.get(module.__name__, ()):
            try:
                if role == "target":
                    self.apply(hook, module)
                else:
                    self.apply_alias(hook, module)
            except Exception as e:
                if not hook.optional:
                    _report.skipped(hook.name, "%s: %s" % (type(e).__name__, e))

    def apply(self, hook, module):
        try:
            owner, attr, raw, _ = _resolve(module, hook.target)
        except AttributeError:
            if not hook.optional:
                _report.skipped(hook.name, "%s has no %s" % (module.__name__, hook.target))
            return
        ctx = _wrap.Context(standalone=self.standalone)
        replacement = _wrap_descriptor(hook, raw, self.shim, ctx)
        if replacement is None:
            return
        aliases = _class_aliases(owner, attr, raw) if isinstance(owner, type) else []
        setattr(owner, attr, replacement)
        for a in aliases:
            setattr(owner, a, replacement)
        original = getattr(raw, "__func__", raw)
        self.originals[hook.name] = (original, getattr(replacement, "__func__", replacement))
        where = "%s:%s" % (hook.module, hook.target)
        _state["applied"][hook.name] = where + "".join(" (and %s)" % a for a in aliases)
        if self.warn.get(hook.name):
            self.watched.append((hook, ctx, where))
        # Aliases imported before the target was patched still hold the original.
        for a in hook.aliases:
            m = sys.modules.get(a)
            if m is not None:
                self.apply_alias(hook, m)

    def apply_alias(self, hook, module):
        pair = self.originals.get(hook.name)
        if pair is None:
            return
        original, wrapper = pair
        attr = hook.target.split(".")[-1]
        if getattr(module, attr, None) is original:
            setattr(module, attr, wrapper)

    def report_unreached(self):
        """At exit: a wrapped target whose wrapper never ran means the program called it
        some other way (a binding this version of the package makes differently), or
        not at all; either way its ranges are missing, which must not pass silently."""
        for hook, ctx, where in self.watched:
            if not ctx.reached[0]:
                _report.say_once(("unreached", hook.name),
                                 "teller: hook %s never reached: %s was wrapped but no call went "
                                 "through the wrapper, so it recorded nothing" % (hook.name, where))

    def report_never_imported(self):
        """User specs name functions the user expects to run; say when a module never
        came. Built-in specs stay quiet: an engine imports only some of its versions."""
        for h in self.user_hooks:
            if h.name not in _state["applied"] and h.module not in sys.modules and not h.optional:
                _report.skipped(h.name, "module %s was never imported" % h.module)


def _package_installed(name):
    """Whether a top-level package exists, without importing it (a path scan only)."""
    import importlib.machinery
    if name in sys.modules:
        return True
    try:
        return importlib.machinery.PathFinder.find_spec(name) is not None
    except Exception:
        return True  # cannot tell; stay quiet


def _multiprocessing_helper():
    """Whether this process is one of multiprocessing's own servers (the forkserver, the
    resource tracker): they run the library's code only, so a user hook's module never
    comes and no wrapper runs there, and exit reports from them would only be noise.
    Python starts them with `-c "from multiprocessing.<server> import main; ..."`."""
    argv = getattr(sys, "orig_argv", None) or []
    try:
        cmd = argv[argv.index("-c") + 1]
    except (ValueError, IndexError):
        return False
    return cmd.startswith(("from multiprocessing.forkserver import",
                           "from multiprocessing.resource_tracker import"))


def _report_at_exit(inst):
    if _multiprocessing_helper():
        return
    if inst.user_hooks:
        inst.report_never_imported()
    inst.report_unreached()


def install(mode=None):
    """Installs the hooks for `mode` (default: $TELLER_PYTHON_HOOKS). Idempotent."""
    if _state["installed"]:
        return
    _state["installed"] = True
    if mode is None:
        mode = os.environ.get("TELLER_PYTHON_HOOKS", "none")
    if mode.strip() in ("", "none"):
        return
    shim_path = os.environ.get("TELLER_NVTX_SHIM", "")
    if not shim_path:
        _report.disabled("TELLER_NVTX_SHIM is not set (is libteller_nvtx_shim.so built?)")
        return
    if not os.environ.get("NVTX_INJECTION64_PATH"):
        # Without an NVTX tool every range would be a no-op: do not wrap at all.
        _report.disabled("NVTX_INJECTION64_PATH is not set, nothing would record the ranges")
        return
    try:
        shim = _nvtx.Shim(shim_path)
    except Exception as e:
        _report.disabled("cannot load %s: %s" % (shim_path, e))
        return

    names, builtin, user = _spec_paths(mode)
    hooks, user_hooks = [], []
    explicit = "auto" not in [n.strip() for n in mode.split(",")]
    for path in builtin + user:
        try:
            sf = _spec.load(path)
        except _spec.SpecError as e:
            _report.skipped(os.path.basename(path), str(e))
            continue
        for label, why in sf.errors:
            _report.skipped(label, why)
        if path in builtin and explicit and sf.packages and \
                not any(_package_installed(p) for p in sf.packages):
            _report.skipped(sf.engine, "package %s is not installed" % " or ".join(sf.packages))
            continue
        hooks.extend(sf.hooks)
        if path in user:
            user_hooks.extend(sf.hooks)
    if not hooks:
        return

    inst = _Installer(shim, hooks, user_hooks, explicit)
    _state["finder"] = _importer.install(inst.by_module.keys(), inst.on_loaded)
    # Anything imported before us (by an earlier sitecustomize, or install() called late).
    for name in list(inst.by_module):
        m = sys.modules.get(name)
        if m is not None:
            inst.on_loaded(m)
    atexit.register(_report_at_exit, inst)
