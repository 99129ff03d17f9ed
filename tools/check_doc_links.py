#!/usr/bin/env python3
"""Checks that the documentation points inside the repository and at things that exist.

Run from anywhere: `python3 tools/check_doc_links.py [--root DIR]`. Exit status 0 when
everything resolves, 1 otherwise, with one `file:line: problem` per finding.

Checks:
1. Markdown links `[text](target)` in README.md, docs/*.md and bench/README.md: a relative
   target (anchor stripped) must exist and stay inside the repository; absolute URLs are
   reported, because the documentation is meant to stand on its own.
2. Repository paths named in those files (`docs/x.md`, `src/...`, `include/...`,
   `tests/...`, `bench/...`, `tools/...`, `share/...`, `demo/...`, brace lists such as
   `src/ingest/kineto_importer.{h,cc}` expanded) must exist. Inside docs/, a bare
   `name.md` must be a page of docs/.
3. Section citations `method.md §N` and `serving-notes.md §N.M` anywhere in the
   repository's text files (code comments included) must name a section heading of
   docs/method.md or docs/serving-notes.md.
4. No file may cite the reference material kept outside the repository
   (`shared/docs`, `serving-reference.md`).
"""
import argparse
import os
import re
import subprocess
import sys

DOC_FILES_GLOBS = ("README.md", "bench/README.md")
PATH_ROOTS = ("docs", "src", "include", "tests", "bench", "tools", "share", "demo")
TEXT_SUFFIXES = (".md", ".cc", ".h", ".c", ".py", ".sh", ".txt", ".cmake", ".in", ".rules",
                 ".json", ".yml", ".yaml")
CITED_DOCS = {"method.md": "docs/method.md", "serving-notes.md": "docs/serving-notes.md"}

LINK_RE = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
PATH_RE = re.compile(r"(?<![\w./-])((?:%s)/[A-Za-z0-9_./{},+-]*[A-Za-z0-9_}/])" % "|".join(PATH_ROOTS))
BARE_MD_RE = re.compile(r"(?<![\w./-])([a-z0-9][a-z0-9-]*\.md)\b")
# A citation: the document's name, then a run of section references, possibly across a
# comment line break ("serving-notes.md\n// §0.4, §5.3").
CITE_RE = re.compile(r"(method|serving-notes)\.md((?:[\s,;/#()]|and|step|R\d+|-|–|§\d+(?:\.\d+)*)*)")
SECTION_RE = re.compile(r"§(\d+(?:\.\d+)*)")
HEADING_RE = re.compile(r"^#{2,4}\s+(\d+(?:\.\d+)*)\.?\s")
FORBIDDEN_RE = re.compile(r"shared/docs|serving-reference\.md")


def repo_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "--cached", "--others",
                              "--exclude-standard"], check=True, capture_output=True, text=True)
        files = [f for f in out.stdout.splitlines() if f]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if not x.startswith(".") and not x.startswith("build")]
            files += [os.path.relpath(os.path.join(d, n), root) for n in names]
    return sorted(f for f in files if os.path.isfile(os.path.join(root, f)))


def expand_braces(path):
    m = re.search(r"\{([^{}]*)\}", path)
    if not m:
        return [path]
    out = []
    for alt in m.group(1).split(","):
        out += expand_braces(path[:m.start()] + alt + path[m.end():])
    return out


def sections(root, rel):
    """Section numbers of a page: its numbered headings, and the numbered list items of a
    top-level section that has no sub-headings (§0.4 = item 4 of a list of facts)."""
    found, items = set(), {}
    top = None
    try:
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            for line in f:
                m = HEADING_RE.match(line)
                if m:
                    found.add(m.group(1))
                    top = m.group(1) if line.startswith("## ") else None
                    continue
                m = re.match(r"^(\d+)\.\s", line)
                if m and top is not None and "." not in top:
                    items.setdefault(top, set()).add(f"{top}.{m.group(1)}")
    except OSError:
        pass
    for top, numbers in items.items():
        if not any(s.startswith(top + ".") for s in found):
            found |= numbers
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    files = repo_files(root)
    problems = []
    doc_files = [f for f in files if f in DOC_FILES_GLOBS or (f.startswith("docs/") and f.endswith(".md"))]

    for rel in doc_files:
        base = os.path.dirname(rel)
        in_code = False
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            lines = f.read().splitlines()
        for no, line in enumerate(lines, 1):
            for target in LINK_RE.findall(line):
                if re.match(r"[a-z]+:", target):
                    problems.append(f"{rel}:{no}: link outside the repository: {target}")
                    continue
                t = target.split("#", 1)[0]
                if not t:
                    continue
                full = os.path.normpath(os.path.join(root, base, t))
                if not full.startswith(root + os.sep):
                    problems.append(f"{rel}:{no}: link leaves the repository: {target}")
                elif not os.path.exists(full):
                    problems.append(f"{rel}:{no}: broken link: {target}")
            for pm in PATH_RE.finditer(line):
                p = pm.group(1)
                if any(c in p for c in "*<>") or "..." in p:
                    continue
                # Outside code spans, "src/dst" is prose: check only what looks like a path
                # (a file name with a suffix, or two or more levels).
                quoted = line.count("`", 0, pm.start()) % 2 == 1
                last = p.rstrip("/").rsplit("/", 1)[-1]
                if not quoted and "." not in last and p.rstrip("/").count("/") < 2:
                    continue
                for q in expand_braces(p.rstrip(".,")):
                    if not os.path.exists(os.path.join(root, q)):
                        problems.append(f"{rel}:{no}: no such path in the repository: {q}")
            if rel.startswith("docs/"):
                stripped = PATH_RE.sub("", LINK_RE.sub("", line))
                for name in BARE_MD_RE.findall(stripped):
                    if name in ("README.md", "MANIFEST.md"):
                        continue
                    if not os.path.exists(os.path.join(root, "docs", name)):
                        problems.append(f"{rel}:{no}: no page docs/{name}")

    known = {doc: sections(root, path) for doc, path in CITED_DOCS.items()}
    for rel in files:
        if not rel.endswith(TEXT_SUFFIXES) and os.path.basename(rel) != "CMakeLists.txt":
            continue
        if rel == "tools/check_doc_links.py":
            continue
        try:
            with open(os.path.join(root, rel), encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError):
            continue
        for m in FORBIDDEN_RE.finditer(text):
            no = text.count("\n", 0, m.start()) + 1
            problems.append(f"{rel}:{no}: cites material outside the repository: {m.group(0)}")
        for m in CITE_RE.finditer(text):
            doc = m.group(1) + ".md"
            no = text.count("\n", 0, m.start()) + 1
            for sec in SECTION_RE.findall(m.group(2)):
                if sec not in known[doc]:
                    problems.append(f"{rel}:{no}: {CITED_DOCS[doc]} has no section §{sec}")

    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} problem(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
