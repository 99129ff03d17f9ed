#!/usr/bin/env python3
"""Renders Teller's reports in a real browser (docs/report.md, "Tests").

  browser_test.py html TELLER WORKDIR README
      The README's demo (its main job, read from README.md): simulate, then its `teller
      diagnose ... --html` with --json added, then headless Chromium
      opens the HTML report: no console errors, the key elements there in the numbers the
      JSON report gives, a table sorts on a click, a screenshot that is not blank.
  browser_test.py speedscope TELLER WORKDIR README SPEEDSCOPE_DIR
      A small demo exported with `teller export --perfetto`, opened in speedscope (a
      trace-event viewer from npm, served from a local folder, offline): it reads the file
      and lists one profile per track the export named.

Exits 77 (ctest's skip) when chromium, node or speedscope is absent, saying which.
"""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SKIP = 77

def readme_demo(readme):
    """The README's main job: the arguments of its `teller simulate` (without --out) and of
    its `teller diagnose` (without the trace), which must write the HTML report."""
    for line in open(readme, encoding="utf-8"):
        if "build/bin/teller simulate" in line and "/tmp/teller-demo" in line:
            parts = [shlex.split(p) for p in line.strip().split(" && ")]
            sim = next(p for p in parts if p[:2] == ["build/bin/teller", "simulate"])
            diag = next(p for p in parts if p[:2] == ["build/bin/teller", "diagnose"])
            out = sim.index("--out")
            sim = sim[1:out] + sim[out + 2:]
            assert "--html" in diag, "the README's main job no longer writes the HTML report"
            html = diag[diag.index("--html") + 1]
            diag = [a for a in diag[3:]]
            return sim, diag, html
    sys.exit(f"{readme}: no demo command (build/bin/teller simulate ... /tmp/teller-demo)")


def need(tool, env):
    path = os.environ.get(env) or shutil.which(tool)
    if not path:
        print(f"skipped: {tool} not found (tools/setup.sh installs it; or set {env})")
        sys.exit(SKIP)
    return path


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout}\n{r.stderr}")
    return r.stdout


def check(chromium, node, url, screenshot, ready, expects, serve=None):
    cmd = [node, os.path.join(HERE, "browser_check.js"), "--chromium", chromium, "--url", url,
           "--screenshot", screenshot, "--ready", ready, "--timeout", "20"]
    if serve:
        cmd += ["--serve", serve]
    for name, expr in expects:
        cmd += ["--expect", f"{name}={expr}"]
    start = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    print(r.stdout + r.stderr, end="")
    print(f"browser: {time.time() - start:.1f} s")
    return r.returncode


def html_test(teller, work, readme):
    chromium, node = need("chromium", "CHROMIUM"), need("node", "NODE")
    sim, diag, readme_html = readme_demo(readme)
    demo = os.path.join(work, "demo")
    shutil.rmtree(demo, ignore_errors=True)
    run([teller] + sim + ["--out", demo])
    report, page = os.path.join(work, "demo.json"), os.path.join(work, "demo.html")
    diag = [page if a == readme_html else a for a in diag]
    start = time.time()
    out = run([teller, "diagnose", demo] + diag + ["--json", report])
    print(f"diagnose --json --html: {time.time() - start:.1f} s, {os.path.getsize(page)} bytes")
    assert f"wrote {page}" in out, out
    d = json.load(open(report))
    abnormal = [s for s in d["steps"] if s["abnormal"]]
    ranks = {r["rank"] for s in d["steps"] for r in s["ranks"]}
    marked = sum(len(s["ranks"]) for s in abnormal)
    consequences = sum(len(s["consequences"]) for s in abnormal[:20])
    verdict = f"{len(abnormal)} of {len(d['steps'])} steps abnormal"
    q = "document.querySelectorAll"
    expects = [
        ("verdict", f"document.getElementById('verdict-line').textContent.indexOf({json.dumps(verdict)}) === 0"),
        ("categories", f"{q}('#categories .chip').length === {len({s['fault_type'] for s in abnormal})}"),
        ("roots listed", f"{q}('#roots li').length === {min(5, len(d['top_operators']))}"),
        ("a series per rank", f"{q}('svg.series').length === {len(ranks)}"),
        ("abnormal steps marked", f"{q}('circle.abnormal-point').length === {marked}"),
        ("a timeline per detailed step", f"{q}('svg.timeline').length === {min(20, len(abnormal))}"),
        ("roots highlighted", f"{q}('svg.timeline rect.role-1').length > 0"),
        ("call paths", f"{q}('ol.path li').length > 0"),
        ("collective arrivals", f"({q}('svg.collective rect.late').length > 0) === {str(consequences > 0).lower()}"),
        ("distributions", f"{q}('svg.distribution').length === {min(4, len(d['top_operators']))}"),
        ("counters", f"{q}('#counters-table tbody tr').length === {min(50, len(d['counters']))}"),
        # Sorting: a click on "count" puts the largest count first.
        ("operator table sorts",
         "(function(){var t=document.getElementById('operators-table');"
         "var th=t.querySelector('th[data-key=count]');th.click();"
         "var first=Number(t.querySelector('tbody tr td:nth-child(4)').textContent);"
         "var d=JSON.parse(document.getElementById('teller-data').textContent);"
         "return first===Math.max.apply(null,d.operators.map(function(o){return o.count;}));})()"),
    ]
    shot = os.path.join(work, "demo.png")
    rc = check(chromium, node, "file://" + os.path.abspath(page), shot,
               "document.body.getAttribute('data-rendered') === 'yes'", expects)
    return rc or log_evidence_test(teller, work, chromium, node)


def log_evidence_test(teller, work, chromium, node):
    """A starved run (requests held in the queue: only their own log lines show it): the
    page's log evidence section lists every request wait, rare line and log finding of the
    JSON report, with its request, step link and line."""
    run_dir = os.path.join(work, "starved")
    shutil.rmtree(run_dir, ignore_errors=True)
    run([teller, "simulate", "--profile", "vllm-v0", "--requests", "30", "--seed", "1",
         "--nodes", "1", "--gpus-per-node", "1", "--tp", "1", "--pp", "1", "--layers", "2",
         "--fault", "starvation:onset=1s,duration=2s,magnitude=2", "--out", run_dir])
    report, page = os.path.join(work, "starved.json"), os.path.join(work, "starved.html")
    run([teller, "diagnose", run_dir, "--json", report, "--html", page])
    d = json.load(open(report))
    # The page's order: each step's log evidence in diagnosis order, then the log findings.
    entries = [(s, e) for s in d["steps"] for e in s.get("log_evidence", [])]
    findings = [f for f in d.get("findings", []) if f["kind"] in ("log_period", "log_error")]
    waits = [e for _, e in entries if e["kind"] == "request_latency"]
    assert waits, "the starved run gives no request_latency evidence"
    # The page lists the abnormal steps highest score first: a wait's step link points there.
    abnormal = sorted([s for s in d["steps"] if s["abnormal"]], key=lambda s: -s["score"])
    first_step, first = entries[0]
    k = next(i for i, s in enumerate(abnormal) if s is first_step) if first_step["abnormal"] else -1
    total = len(entries) + len(findings)
    q = "document.querySelectorAll"
    cell = "document.querySelector('#log-evidence-table tbody tr').children"
    expects = [
        ("log evidence heading", f"document.querySelector('#log-evidence h2').textContent === "
                                 f"{json.dumps('Log evidence (%d)' % total)}"),
        ("log evidence rows", f"{q}('#log-evidence-table tbody tr').length === {min(25, total)}"),
        ("request waits", f"Array.prototype.filter.call({q}('#log-evidence-table tbody tr'), "
                          f"function(r){{return r.children[0].textContent==='request wait';}}).length"
                          f" === {sum(1 for _, e in entries[:25] if e['kind'] == 'request_latency')}"),
        ("first row's line", f"{cell}[5].textContent === {json.dumps(first['file'] + ':' + str(first['line']))}"),
        ("first row's message", f"{cell}[7].textContent === {json.dumps(first['message'])}"),
    ]
    if first["kind"] == "request_latency":
        expects.append(("first row's request", f"{cell}[2].textContent === {json.dumps(first['request'])}"))
    if 0 <= k < 20:
        expects.append(("first row links its step",
                        f"(function(){{var a={cell}[1].querySelector('a.step-link');"
                        f"if(!a||a.getAttribute('href')!=='#step-{k}')return false;a.click();"
                        f"return document.getElementById('step-{k}').open===true;}})()"))
    shot = os.path.join(work, "starved.png")
    return check(chromium, node, "file://" + os.path.abspath(page), shot,
                 "document.body.getAttribute('data-rendered') === 'yes'", expects)


def speedscope_test(teller, work, readme, speedscope):
    chromium, node = need("chromium", "CHROMIUM"), need("node", "NODE")
    sim = readme_demo(readme)[0]
    if not os.path.isfile(os.path.join(speedscope, "index.html")):
        print(f"skipped: speedscope not found in {speedscope} (tools/setup.sh installs it from npm)")
        sys.exit(SKIP)
    demo = os.path.join(work, "small")
    shutil.rmtree(demo, ignore_errors=True)
    small = list(sim)
    small[small.index("--requests") + 1] = "4"
    small[small.index("--layers") + 1] = "4"
    small[small.index("--output-median") + 1] = "8"
    small[small.index("--fault") + 1] = "kernel_slow_one_gpu:target=gemm,magnitude=3,onset=0.1s,duration=0.3s,rank=1"
    run([teller] + small + ["--out", demo])
    site = os.path.join(work, "speedscope")
    shutil.rmtree(site, ignore_errors=True)
    shutil.copytree(speedscope, site)
    out = run([teller, "export", demo, "--perfetto", os.path.join(site, "trace.json")])
    tracks = int(re.search(r"on (\d+) tracks", out).group(1))
    expects = [
        # One profile per track: speedscope shows "(1/N)" beside the profile's name.
        ("all tracks", f"document.body.innerText.indexOf('(1/{tracks})') >= 0"),
        ("named by rank", "/rank \\d+ \\(/.test(document.body.innerText)"),
    ]
    shot = os.path.join(work, "speedscope.png")
    return check(chromium, node, "index.html#profileURL=/trace.json", shot,
                 "document.body.innerText.indexOf('/" + str(tracks) + ")') >= 0", expects, serve=site)


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    mode, teller, work, readme = sys.argv[1:5]
    os.makedirs(work, exist_ok=True)
    if mode == "html":
        return html_test(teller, work, readme)
    if mode == "speedscope" and len(sys.argv) == 6:
        return speedscope_test(teller, work, readme, sys.argv[5])
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main())
