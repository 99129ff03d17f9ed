"""Attribute paths: how a spec says where request ids and fields live in a call.

    path  = root *step
    root  = "return"            the wrapped function's return value
          | "@" digits          positional argument N (0 is `self` for methods)
          | identifier          the parameter of that name (positional or keyword)
    step  = "." identifier      attribute (a dict is indexed by key instead)
          | "[" ["-"] digits "]" item N of a sequence
          | "[*]"               every item (a dict yields its keys)
          | "[?" identifier "]" every item whose attribute is truthy
          | "()"                call with no arguments (e.g. tensor.numel())

A path yields a list of values. A missing attribute or index ends that branch quietly:
engines change their objects between versions, and a spec lists alternatives instead
of failing. `found` tells "the path resolved to nothing" (an empty batch) apart from
"this path does not exist here" (an older engine), so messages never claim n=0 for a
batch whose ids we could not see.
"""
import inspect
import re

_TOKEN = re.compile(
    r"\.([A-Za-z_][A-Za-z0-9_]*)|\[\*\]|\[(-?[0-9]+)\]|\[\?([A-Za-z_][A-Za-z0-9_]*)\]|\(\)")
_ROOT = re.compile(r"^(return|@[0-9]+|[A-Za-z_][A-Za-z0-9_]*)")

_ATTR, _INDEX, _ALL, _FILTER, _CALL = range(5)
_MISSING = object()


class PathError(ValueError):
    pass


class Path(object):
    __slots__ = ("text", "root", "steps")

    def __init__(self, text):
        self.text = text
        m = _ROOT.match(text)
        if not m:
            raise PathError("path %r: must start with return, @N or a parameter name" % text)
        self.root = m.group(1)
        self.steps = []
        pos = m.end()
        while pos < len(text):
            t = _TOKEN.match(text, pos)
            if not t:
                raise PathError("path %r: cannot parse at %r" % (text, text[pos:]))
            whole = t.group(0)
            if t.group(1) is not None:
                self.steps.append((_ATTR, t.group(1)))
            elif t.group(2) is not None:
                self.steps.append((_INDEX, int(t.group(2))))
            elif t.group(3) is not None:
                self.steps.append((_FILTER, t.group(3)))
            elif whole == "[*]":
                self.steps.append((_ALL, None))
            else:
                self.steps.append((_CALL, None))
            pos = t.end()

    def uses_return(self):
        return self.root == "return"


class Binder(object):
    """Finds a call's arguments by parameter name without inspect.Signature.bind,
    which is too slow for every call of a hot function."""

    def __init__(self, fn):
        self.index = {}
        self.defaults = {}
        try:
            params = list(inspect.signature(fn).parameters.values())
        except (TypeError, ValueError):
            params = []
        for i, p in enumerate(params):
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                self.index[p.name] = i
            if p.default is not p.empty:
                self.defaults[p.name] = p.default

    def root(self, name, args, kwargs, ret):
        if name == "return":
            return ret
        if name[0] == "@":
            i = int(name[1:])
            return args[i] if i < len(args) else _MISSING
        i = self.index.get(name)
        if i is not None and i < len(args):
            return args[i]
        if name in kwargs:
            return kwargs[name]
        return self.defaults.get(name, _MISSING)


def evaluate(path, root):
    """Returns (found, values). Never raises for data reasons."""
    if root is _MISSING:
        return False, []
    values = [root]
    found_empty = False
    for kind, arg in path.steps:
        out = []
        for v in values:
            try:
                if kind == _ATTR:
                    if isinstance(v, dict):
                        if arg in v:
                            out.append(v[arg])
                    else:
                        x = getattr(v, arg, _MISSING)
                        if x is not _MISSING:
                            out.append(x)
                elif kind == _INDEX:
                    out.append(v[arg])
                elif kind == _ALL:
                    items = list(v)
                    if not items:
                        found_empty = True
                    out.extend(items)
                elif kind == _FILTER:
                    items = list(v)
                    if not items:
                        found_empty = True
                    out.extend(x for x in items if getattr(x, arg, False))
                    if items and not out:
                        found_empty = True
                else:
                    out.append(v())
            except Exception:  # wrong shape for this engine version: drop this branch
                continue
        values = out
        if not values:
            break
    if values:
        return True, values
    return found_empty, []


def first(path, root):
    found, values = evaluate(path, root)
    return values[0] if values else _MISSING


MISSING = _MISSING
