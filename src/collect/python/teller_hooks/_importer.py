"""Lazy installation: hooks are applied when their module finishes importing.

A finder at the front of sys.meta_path answers only for modules that some hook targets.
It asks the finders behind it for the real spec and arranges for a callback to run right
after the module's code has executed, before the importer (or a package's
`from .x import *`) sees it. So nothing is imported early, and aliases copied at import
time (torch.distributed re-exporting distributed_c10d's functions) pick up the wrapper.
"""
import sys
import threading


class PostImportFinder(object):
    def __init__(self, names, on_loaded):
        self._names = frozenset(names)
        self._on_loaded = on_loaded
        self._busy = threading.local()
        self._pending = set()  # modules whose loader could not be patched

    def _sweep(self):
        for n in list(self._pending):
            m = sys.modules.get(n)
            spec = getattr(m, "__spec__", None)
            if m is not None and not getattr(spec, "_initializing", False):
                self._pending.discard(n)
                self._on_loaded(m)

    # The finder protocol's only required method (importlib.abc.MetaPathFinder).
    def find_spec(self, fullname, path=None, target=None):
        if self._pending:
            self._sweep()
        if fullname not in self._names:
            return None
        busy = getattr(self._busy, "names", None)
        if busy is None:
            busy = self._busy.names = set()
        if fullname in busy:
            return None
        busy.add(fullname)
        try:
            spec = None
            for finder in list(sys.meta_path):
                if finder is self:
                    continue
                fs = getattr(finder, "find_spec", None)
                if fs is None:
                    continue
                spec = fs(fullname, path, target)
                if spec is not None:
                    break
        finally:
            busy.discard(fullname)
        if spec is None or spec.loader is None:
            return spec
        self._chain_exec(spec)
        return spec

    def invalidate_caches(self):
        pass

    def _chain_exec(self, spec):
        """Runs on_loaded(module) after the loader's exec_module succeeds.

        Patching the loader instance (not its class) keeps the module's __loader__ the
        real object, so code that checks its type or reads resources keeps working.
        Loaders shared between modules are guarded by the name check and restored."""
        loader = spec.loader
        original = getattr(loader, "exec_module", None)
        if original is None or isinstance(loader, type):
            self._pending.add(spec.name)  # applied at the next import of anything
            return
        name = spec.name
        on_loaded = self._on_loaded

        def exec_module(module):
            try:
                original(module)
            finally:
                try:
                    if loader.__dict__.get("exec_module") is exec_module:
                        del loader.exec_module
                except Exception:
                    pass
            if getattr(module, "__name__", None) == name:
                on_loaded(module)

        try:
            loader.exec_module = exec_module
        except Exception:
            self._pending.add(name)  # __slots__ loaders: applied at the next import


def install(names, on_loaded):
    finder = PostImportFinder(names, on_loaded)
    sys.meta_path.insert(0, finder)
    return finder
