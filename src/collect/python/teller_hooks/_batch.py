"""Turns a call's batch object into message fields: kind, n, tokens, reqs, prefill.

Kind rules, tried in this order (the spec chooses which ones apply):
  1. kind.path + kind.map: a mode value (SGLang's forward_mode.name) mapped to a kind;
     an unmapped value is written lower-cased.
  2. kind.prefill_count / kind.decode_count: counts (vLLM v0 attention metadata).
  3. kind.prefill_reqs (+ req_tokens, spec_tokens): a request is in prefill when it is
     listed by prefill_reqs (first scheduled: vLLM v1 scheduled_new_reqs) or when it
     was scheduled more tokens than 1 + its draft tokens (a chunked or resumed prefill);
     otherwise it decodes. All prefill -> prefill, none -> decode, else mixed.
An empty batch is idle. When nothing applies the kind is unknown.
"""
from . import _message
from ._paths import MISSING, evaluate, first


def _as_int(v):
    try:
        return int(v)
    except Exception:
        return None


def _ids(paths, binder, args, kwargs, ret):
    """Concatenates the ids of every path, first occurrence wins. Paths are
    alternatives for different engine versions; a version matches one or several."""
    found_any = False
    out = []
    seen = set()
    for p in paths:
        found, values = evaluate(p, binder.root(p.root, args, kwargs, ret))
        found_any = found_any or found
        for v in values:
            s = v if isinstance(v, str) else str(v)
            if s not in seen:
                seen.add(s)
                out.append(s)
    return found_any, out


def _kind(rule, ids, binder, args, kwargs, ret):
    """Returns (kind, prefill ids or None)."""
    if rule.path is not None:
        v = first(rule.path, binder.root(rule.path.root, args, kwargs, ret))
        if v is not MISSING and v is not None:
            key = str(v)
            return str(rule.map.get(key, key.lower())), None
    if rule.prefill_count is not None and rule.decode_count is not None:
        p = _as_int(first(rule.prefill_count, binder.root(rule.prefill_count.root, args, kwargs, ret)))
        d = _as_int(first(rule.decode_count, binder.root(rule.decode_count.root, args, kwargs, ret)))
        if p is not None and d is not None:
            if p and d:
                return "mixed", None
            return ("prefill" if p else "decode" if d else "idle"), None
    if rule.prefill_reqs and ids is not None:
        _, listed = _ids(rule.prefill_reqs, binder, args, kwargs, ret)
        prefill = set(listed)
        tokens = {}
        if rule.req_tokens is not None:
            t = first(rule.req_tokens, binder.root(rule.req_tokens.root, args, kwargs, ret))
            if isinstance(t, dict):
                tokens = t
        drafts = {}
        if rule.spec_tokens is not None:
            s = first(rule.spec_tokens, binder.root(rule.spec_tokens.root, args, kwargs, ret))
            if isinstance(s, dict):
                drafts = s
        pre = []
        for rid in ids:
            if rid in prefill:
                pre.append(rid)
                continue
            n = _as_int(tokens.get(rid)) if tokens else None
            if n is not None:
                try:
                    k = len(drafts.get(rid) or ())
                except Exception:
                    k = 0
                if n > 1 + k:
                    pre.append(rid)
        if not ids:
            return "idle", None
        if len(pre) == len(ids):
            return "prefill", None
        if not pre:
            return "decode", None
        return "mixed", pre
    return "unknown", None


def fields(batch, seq, binder, args, kwargs, ret):
    """Returns (fields, ids or None, empty) for one call; fields are escaped pairs."""
    out = [("seq", str(seq))]
    ids = None
    if batch.reqs:
        found, raw = _ids(batch.reqs, binder, args, kwargs, ret)
        if found:
            ids = raw
    n = None
    if ids is not None:
        n = len(ids)
    elif batch.count is not None:
        n = _as_int(first(batch.count, binder.root(batch.count.root, args, kwargs, ret)))
    if batch.root is not None:
        r = first(batch.root, binder.root(batch.root.root, args, kwargs, ret))
        if r is MISSING or r is None:
            return out, None, True  # no batch at all (SGLang idle loop iteration)
    empty = n == 0
    prefill = None
    if batch.kind is not None:
        kind, prefill = _kind(batch.kind, ids, binder, args, kwargs, ret)
        out.append(("kind", kind))
    if n is not None:
        out.append(("n", str(n)))
    if batch.tokens is not None:
        t = _as_int(first(batch.tokens, binder.root(batch.tokens.root, args, kwargs, ret)))
        if t is not None:
            out.append(("tokens", str(t)))
    escaped = None
    if ids is not None and batch.ids:
        escaped = [_message.escape(i) for i in ids]
        if prefill:
            joined = ",".join(_message.escape(i) for i in prefill)
            # Only when it fits beside the ids; readers treat its absence as "not known".
            if len(joined) + sum(len(e) + 1 for e in escaped) < _message.DEFAULT_LIMIT - 256:
                out.append(("prefill", joined))
    return out, escaped, empty
