"""Teller's sitecustomize: put first on PYTHONPATH by `teller run`.

Python imports exactly one module named sitecustomize at start-up, so ours would hide
the one the program normally gets (Debian's apport hook, a virtualenv's, a user's on
PYTHONPATH). We therefore
  1. install Teller's hooks when TELLER_PYTHON_HOOKS is set and not "none" (first, so
     that imports made by the next sitecustomize are hooked too), then
  2. import the next sitecustomize on sys.path: our directory is taken off sys.path and
     our module out of sys.modules for the duration, then both are restored.
Errors in step 1 cost one stderr line and never stop the program. Errors raised by the
chained sitecustomize propagate, so the site module reports them exactly as it would
without us. A second copy of this file (another build on PYTHONPATH, a nested
`teller run`) sees the marker on sys and does nothing, so chaining cannot recurse.
"""
import os
import sys

_MARK = "_teller_sitecustomize"


def _install_hooks():
    mode = os.environ.get("TELLER_PYTHON_HOOKS", "")
    if not mode or mode.strip() == "none":
        return
    try:
        import teller_hooks
        teller_hooks.install(mode)
    except Exception as e:  # our bug must never stop the program
        try:
            sys.stderr.write("teller: python hooks disabled: %s: %s\n" % (type(e).__name__, e))
        except Exception:
            pass


def _chain():
    here = os.path.dirname(os.path.realpath(__file__))

    def ours(entry):
        try:
            return os.path.realpath(entry or os.curdir) == here
        except Exception:
            return False

    removed = [(i, p) for i, p in enumerate(sys.path) if ours(p)]
    me = sys.modules.get(__name__)
    sys.path[:] = [p for p in sys.path if not ours(p)]
    sys.modules.pop(__name__, None)
    try:
        import importlib.util
        spec = importlib.util.find_spec("sitecustomize")
        if spec is not None:
            other = importlib.import_module("sitecustomize")
            if me is not None:
                me._teller_chained = other
    finally:
        # Our entries go back where they were; whatever the chained module changed stays.
        for i, p in removed:
            sys.path.insert(min(i, len(sys.path)), p)
        if me is not None:
            sys.modules[__name__] = me


if not getattr(sys, _MARK, False):
    setattr(sys, _MARK, True)
    _install_hooks()
    _chain()
