"""Hook specs: JSON files that say which functions to wrap and what their ranges say.

Format (docs/python-hooks.md, "Spec format"): an object with "format":
"teller-hooks/1", optional "engine", "packages", "batches" (named batch profiles) and
"hooks" (a list). Loading validates everything up front, so a bad entry is reported
once at start-up and never costs anything at call time.
"""
import json
import re

from . import _message
from . import _paths

FORMAT = "teller-hooks/1"
MODES = ("range", "mark", "module_call")
_MODULE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_KINDS = ("prefill", "decode", "mixed", "idle", "unknown")


class SpecError(ValueError):
    pass


class KindRule(object):
    """How a batch's kind (prefill/decode/mixed/idle) is derived; see _batch.py."""

    def __init__(self, d, subst):
        if not isinstance(d, dict):
            raise SpecError("kind must be an object")
        self.path = _opt_path(d.get("path"), subst)
        self.map = d.get("map", {})
        if not isinstance(self.map, dict):
            raise SpecError("kind.map must be an object")
        self.prefill_count = _opt_path(d.get("prefill_count"), subst)
        self.decode_count = _opt_path(d.get("decode_count"), subst)
        self.prefill_reqs = [_path(p, subst) for p in _list(d.get("prefill_reqs", []), "kind.prefill_reqs")]
        self.req_tokens = _opt_path(d.get("req_tokens"), subst)
        self.spec_tokens = _opt_path(d.get("spec_tokens"), subst)

    def paths(self):
        ps = [self.path, self.prefill_count, self.decode_count, self.req_tokens, self.spec_tokens]
        return [p for p in ps + self.prefill_reqs if p is not None]


class Batch(object):
    """Where a call's batch lives: its request ids, kind, token count and extra fields."""

    def __init__(self, d, profiles):
        if not isinstance(d, dict):
            raise SpecError("batch must be an object")
        if "profile" in d:
            prof = profiles.get(d["profile"])
            if prof is None:
                raise SpecError("unknown batch profile %r" % d["profile"])
            merged = dict(prof)
            merged.update({k: v for k, v in d.items() if k != "profile"})
            d = merged
        root = d.get("root", "")
        if not isinstance(root, str):
            raise SpecError("batch.root must be a path")

        def subst(text):
            # Profiles write "$" for the batch object; the hook's "root" says where it is.
            if text.startswith("$"):
                if not root:
                    raise SpecError("path %r uses $ but the batch has no root" % text)
                return root + text[1:]
            return text

        self.root = _path(root, lambda t: t) if root else None
        self.reqs = [_path(p, subst) for p in _list(d.get("reqs", []), "batch.reqs")]
        self.ids = bool(d.get("ids", True))
        self.kind = KindRule(d["kind"], subst) if "kind" in d else None
        self.tokens = _opt_path(d.get("tokens"), subst)
        self.count = _opt_path(d.get("count"), subst)
        self.mark = d.get("mark", "teller.batch")
        self.skip_empty = bool(d.get("skip_empty", False))
        if not _message.valid_head(self.mark) or " " in self.mark:
            raise SpecError("batch.mark %r is not a valid name" % self.mark)
        all_paths = self.reqs + ([self.tokens] if self.tokens else []) + \
            ([self.count] if self.count else []) + (self.kind.paths() if self.kind else []) + \
            ([self.root] if self.root else [])
        uses = set(p.uses_return() for p in all_paths)
        if len(uses) > 1:
            raise SpecError("a batch reads either the arguments or the return value, not both")
        self.from_return = uses == {True}


class Hook(object):
    """One target function and what to record around it."""

    def __init__(self, d, profiles, origin):
        if not isinstance(d, dict):
            raise SpecError("a hook must be an object")
        self.origin = origin
        self.name = d.get("name")
        if not isinstance(self.name, str) or not self.name or " " in self.name:
            raise SpecError("hook without a valid name")
        self.module = d.get("module")
        if not isinstance(self.module, str) or not _MODULE_RE.match(self.module):
            raise SpecError("module %r is not a module name" % (self.module,))
        self.target = d.get("target")
        if not isinstance(self.target, str) or not re.match(
                r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$", self.target):
            raise SpecError("target %r is not a qualified name" % (self.target,))
        self.mode = d.get("mode", "range")
        if self.mode not in MODES:
            raise SpecError("mode %r is not one of %s" % (self.mode, ", ".join(MODES)))
        self.range = d.get("range", "teller." + self.target.split(".")[-1])
        if not isinstance(self.range, str) or not _message.valid_head(self.range):
            raise SpecError("range %r is not 'name [key=value ...]' in the message grammar" % (self.range,))
        self.batch = Batch(d["batch"], profiles) if "batch" in d else None
        if self.mode == "mark" and (self.batch is None or not self.batch.from_return):
            raise SpecError("mode mark needs a batch read from the return value")
        fields = d.get("fields", {})
        if not isinstance(fields, dict):
            raise SpecError("fields must be an object")
        self.fields = []
        for k, p in fields.items():
            if not _message.valid_key(k):
                raise SpecError("field key %r is not an identifier" % k)
            path = _path(p, lambda t: t)
            if path.uses_return():
                raise SpecError("field %r: fields are read before the call, not from return" % k)
            self.fields.append((k, path))
        self.optional = bool(d.get("optional", False))
        self.aliases = _list(d.get("aliases", []), "aliases")
        for a in self.aliases:
            if not isinstance(a, str) or not _MODULE_RE.match(a):
                raise SpecError("alias %r is not a module name" % (a,))
        self.skip_when_compiling = bool(d.get("skip_when_compiling", False))
        self.standalone = None
        mc = d.get("module_call", {})
        if self.mode == "module_call":
            if not isinstance(mc, dict):
                raise SpecError("module_call must be an object")
            try:
                self.class_regex = re.compile(mc.get("class_regex", "(?!)"))
            except re.error as e:
                raise SpecError("module_call.class_regex: %s" % e)
            self.top_level = bool(mc.get("top_level", False))
            self.standalone = Standalone(mc["standalone"]) if "standalone" in mc else None
        # None: the installer decides (user specs warn, built-in ones only when they say so).
        wu = d.get("warn_unreached")
        if wu is not None and not isinstance(wu, bool):
            raise SpecError("warn_unreached must be true or false")
        self.warn_unreached = wu


class Standalone(object):
    """What a module_call hook adds when no active hook records engine steps (a plain
    PyTorch program): a step range around each outermost module call, and a range per
    torch function called inside it (recorded through a torch function mode)."""

    def __init__(self, d):
        if not isinstance(d, dict):
            raise SpecError("module_call.standalone must be an object")
        self.step = d.get("step")
        self.ops = d.get("ops")
        for key, head in (("step", self.step), ("ops", self.ops)):
            if head is not None and (not isinstance(head, str) or not _message.valid_head(head)):
                raise SpecError("module_call.standalone.%s %r is not a valid range head" % (key, head))
        try:
            self.ops_skip = re.compile(d.get("ops_skip", "(?!)"))
        except (re.error, TypeError) as e:
            raise SpecError("module_call.standalone.ops_skip: %s" % e)


class SpecFile(object):
    def __init__(self, path, engine, packages, hooks, errors):
        self.path = path
        self.engine = engine
        self.packages = packages
        self.hooks = hooks
        self.errors = errors  # [(hook name or file, why)] reported once by the installer


def load(path):
    """Parses one spec file. Raises SpecError only when the whole file is unusable;
    a bad hook is kept out and listed in .errors."""
    try:
        with open(path, "r", encoding="utf-8") as f:
            d = json.load(f)
    except (OSError, ValueError) as e:
        raise SpecError("cannot read %s: %s" % (path, e))
    if not isinstance(d, dict) or d.get("format") != FORMAT:
        raise SpecError("%s: not a %s spec (missing \"format\": \"%s\")" % (path, FORMAT, FORMAT))
    engine = d.get("engine", "user")
    packages = d.get("packages", [])
    profiles = d.get("batches", {})
    if not isinstance(profiles, dict):
        raise SpecError("%s: batches must be an object" % path)
    hooks, errors = [], []
    seen = set()
    for i, h in enumerate(_list(d.get("hooks", []), "hooks")):
        label = h.get("name") if isinstance(h, dict) and isinstance(h.get("name"), str) else "%s#%d" % (path, i)
        try:
            hook = Hook(h, profiles, path)
            if hook.name in seen:
                raise SpecError("duplicate hook name")
            seen.add(hook.name)
            hooks.append(hook)
        except (SpecError, _paths.PathError) as e:
            errors.append((label, "bad spec: %s" % e))
    return SpecFile(path, engine, packages, hooks, errors)


def _list(v, what):
    if not isinstance(v, list):
        raise SpecError("%s must be a list" % what)
    return v


def _path(text, subst):
    if not isinstance(text, str):
        raise SpecError("path %r is not a string" % (text,))
    return _paths.Path(subst(text))


def _opt_path(text, subst):
    return None if text is None else _path(text, subst)
