"""Scoring a `teller diagnose --json` report against the plant (JSON version 1 and 2)."""
import json
import re

from .trace import is_comm


def _norm(name):
    # Version 1 writes host-range names with digits replaced by '#'.
    return re.sub(r"#+", "#", re.sub(r"\d", "#", name))


class Report:
    def __init__(self, path):
        with open(path, encoding="utf-8") as f:
            self.d = json.load(f)
        self.v2 = self.d.get("version") == 2
        self.top = [t for t in self.d.get("top_operators", []) if isinstance(t, dict)]

    def same(self, entry_name, layer, planted):
        if entry_name == planted:
            return True
        # v1 keeps kernel names exact and digit-normalizes host ranges.
        return not self.v2 and layer != "GPU" and _norm(entry_name) == _norm(planted)

    def in_top(self, names, k=3):
        for t in self.top[:k]:
            for n in names:
                if self.same(t.get("name", ""), t.get("layer"), n):
                    return True
        return False

    def top_names(self, k=3):
        return [t.get("name", "") for t in self.top[:k]]

    def abnormal_steps(self):
        return [s for s in self.d.get("steps", []) if s.get("abnormal")]

    def abnormal_category(self, category):
        """An abnormal step of this fault type."""
        return any(s.get("fault_type") == category for s in self.abnormal_steps())

    def slow_gpu(self, rank=None, step=None):
        """A slow_gpu finding (on `rank`, in step `step` when given), or an abnormal step
        of category runtime_driver (whose first root evidence is on `rank` when given)."""
        return self._slowed("slow_gpu", "runtime_driver", rank, step)

    def slow_host(self, rank=None, step=None):
        """The same for a slower host: a slow_host finding, or an abnormal step of category
        scheduling_software."""
        return self._slowed("slow_host", "scheduling_software", rank, step)

    def _slowed(self, kind, category, rank, step):
        for f in self.d.get("findings", []):
            if f.get("kind") != kind:
                continue
            if rank is not None and f.get("rank") != rank:
                continue
            m = re.search(r" in step (\S+) \(", f.get("title", ""))
            if step is not None and (m is None or m.group(1) != str(step)):
                continue
            return True
        for s in self.abnormal_steps():
            if s.get("fault_type") != category:
                continue
            if step is not None and str(s.get("step")) != str(step):
                continue
            roots = [e for e in s.get("evidence", []) if e.get("role", "root") == "root"]
            if rank is None or (roots and roots[0].get("rank") == rank):
                return True
        return False

    def root_evidence(self):
        for s in self.abnormal_steps():
            for e in s.get("evidence", []):
                if not self.v2 or e.get("role", "root") == "root":
                    yield e

    def names_untouched(self, touched):
        """True when a root evidence entry of an abnormal step names a family the plant did
        not touch."""
        norm = {_norm(n) for n in touched}
        for e in self.root_evidence():
            n = e.get("name", "")
            if n in touched:
                continue
            if not self.v2 and e.get("layer") != "GPU" and _norm(n) in norm:
                continue
            return True
        return False

    def straggler_named(self, rank):
        """top_operators[0] is on the straggler rank (named first) and is not a comm kernel."""
        if not self.top:
            return False
        t0 = self.top[0]
        if is_comm(t0.get("name", "")):
            return False
        if self.v2:
            # Its ranks list the rank with the most of its excess first.
            if (t0.get("ranks") or [None])[0] == rank:
                return True
            st = self.d.get("stragglers") or []
            return bool(st) and st[0].get("rank") == rank
        # v1 top operators carry no rank: take the rank of that operator's first evidence
        # entry in the highest-scored abnormal step that names it.
        steps = sorted(self.abnormal_steps(), key=lambda s: -float(s.get("score") or 0))
        for s in steps:
            for e in s.get("evidence", []):
                if self.same(e.get("name", ""), e.get("layer"), t0.get("name", "")):
                    return e.get("rank") == rank
        return False
