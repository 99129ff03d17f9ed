// Draws the HTML report (docs/report.md) from the JSON in script#teller-data: the verdict,
// the step-time series per rank, each abnormal step (timeline per rank and stream, call
// paths, collective arrivals, logs), the log evidence, the per-operator table, the duration distributions
// of the top roots and the counters. Plain DOM and SVG; nothing is fetched.
(function () {
  'use strict';
  var SVG = 'http://www.w3.org/2000/svg';
  var D = JSON.parse(document.getElementById('teller-data').textContent);
  var ROLE_COLOR = ['#b8c0cc', '#d62728', '#ff9f1a', '#1f77b4'];
  var ROLE_NAME = ['other', 'root (evidence)', 'consequence (waited)', 'on the call path'];

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function sv(tag, attrs, text) {
    var e = document.createElementNS(SVG, tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function add(parent) {
    for (var i = 1; i < arguments.length; i++) if (arguments[i]) parent.appendChild(arguments[i]);
    return parent;
  }
  // "850 ns", "12.3 us", "4.56 ms", "1.23 s": as the terminal report writes durations.
  function ns(v) {
    if (v === null || v === undefined) return '';
    var a = Math.abs(v);
    if (a < 1e3) return Math.round(v) + ' ns';
    if (a < 1e6) return (v / 1e3).toFixed(1) + ' us';
    if (a < 1e9) return (v / 1e6).toFixed(2) + ' ms';
    return (v / 1e9).toFixed(2) + ' s';
  }
  function fixed(v, d) { return v === null || v === undefined ? '' : Number(v).toFixed(d); }
  function section(id, title) {
    var s = el('section', { id: id });
    add(s, el('h2', {}, title));
    add(document.getElementById('report'), s);
    return s;
  }
  function legend(entries) {
    var l = el('div', { 'class': 'legend' });
    entries.forEach(function (e) {
      var s = el('span');
      var i = el('i');
      i.style.background = e[0];
      add(s, i);
      s.appendChild(document.createTextNode(e[1]));
      add(l, s);
    });
    return l;
  }

  // A table sortable by any column (click its header) and shown a page at a time.
  // cols: [{key, title, num, fmt}]; rows: objects.
  function table(parent, id, cols, rows, pageSize) {
    pageSize = pageSize || 25;
    var wrap = el('div', { 'class': 'table-wrap' });
    var t = el('table', { id: id, 'class': 'sortable-table', 'data-rows': rows.length });
    var thead = el('thead');
    var tr = el('tr');
    var tbody = el('tbody');
    var pager = el('div', { 'class': 'pager' });
    var state = { key: null, dir: 1, page: 0 };
    var view = rows.slice();
    cols.forEach(function (c) {
      var th = el('th', { 'class': 'sortable' + (c.num ? ' num' : ''), 'data-key': c.key }, c.title);
      th.addEventListener('click', function () {
        state.dir = state.key === c.key ? -state.dir : (c.num ? -1 : 1);
        state.key = c.key;
        view.sort(function (a, b) {
          var x = a[c.key], y = b[c.key];
          if (x === y) return 0;
          if (x === null || x === undefined) return 1;
          if (y === null || y === undefined) return -1;
          return (x < y ? -1 : 1) * state.dir;
        });
        Array.prototype.forEach.call(tr.children, function (h) { h.classList.remove('asc', 'desc'); });
        th.classList.add(state.dir > 0 ? 'asc' : 'desc');
        state.page = 0;
        draw();
      });
      add(tr, th);
    });
    function draw() {
      tbody.textContent = '';
      var pages = Math.max(1, Math.ceil(view.length / pageSize));
      state.page = Math.min(state.page, pages - 1);
      view.slice(state.page * pageSize, (state.page + 1) * pageSize).forEach(function (r) {
        var row = el('tr');
        cols.forEach(function (c) {
          var v = r[c.key];
          var shown = c.fmt ? c.fmt(v, r) : v;
          var td = el('td', { 'class': c.num ? 'num' : (c.cls || '') });
          // A formatter may return an element (a link); anything else is text.
          if (shown instanceof Node) td.appendChild(shown);
          else if (shown !== null && shown !== undefined) td.textContent = String(shown);
          add(row, td);
        });
        add(tbody, row);
      });
      pager.textContent = '';
      if (pages > 1) {
        var prev = el('button', { type: 'button' }, 'previous');
        var next = el('button', { type: 'button' }, 'next');
        prev.disabled = state.page === 0;
        next.disabled = state.page === pages - 1;
        prev.addEventListener('click', function () { state.page--; draw(); });
        next.addEventListener('click', function () { state.page++; draw(); });
        add(pager, prev, el('span', {}, 'page ' + (state.page + 1) + ' of ' + pages + ' (' +
            view.length + ' rows)'), next);
      }
    }
    add(thead, tr);
    add(t, thead, tbody);
    add(wrap, t, pager);
    add(parent, wrap);
    draw();
    return t;
  }

  function verdict() {
    var v = D.verdict;
    var s = section('verdict', 'Verdict');
    if (D.meta.mode === 'logs') {
      add(s, el('p', { 'class': 'verdict-line' }, 'No events to diagnose: ' + D.meta.log_lines +
          ' log lines triaged for failures (' + D.findings.length + ' findings).'));
      return;
    }
    var line = el('p', { 'class': 'verdict-line', id: 'verdict-line' });
    add(line, el('span', { 'class': v.abnormal_steps > 0 ? 'bad' : 'ok' },
        v.abnormal_steps + ' of ' + v.steps_total + ' steps abnormal'));
    line.appendChild(document.createTextNode(', ' + v.evidence + ' instances slower than their peers' +
        (v.abnormal_steps > 0 ? '; the abnormal steps lost ' + ns(v.excess_ns) + ' to their roots (' +
        ns(v.abnormal_duration_ns) + ' of step time).' : '.')));
    add(s, line);
    if (D.meta.scope === 'whole_trace') {
      add(s, el('p', { 'class': 'warn' }, 'No step markers: each process\'s whole timeline is one unit.'));
    }
    if (D.meta.scope === 'iterations') {
      add(s, el('p', { 'class': 'warn' }, 'No step markers: the steps are the iterations the work repeats in.'));
    }
    if (v.damage.length) {
      var w = el('p', { 'class': 'warn', id: 'damage' }, 'The input is damaged; the diagnosis is based on what could be read: ' +
          v.damage.map(function (c) { return c.name + ' = ' + c.value; }).join(', '));
      add(s, w);
    }
    if (v.categories.length) {
      var c = el('p', { id: 'categories' }, 'Likely fault category: ');
      v.categories.forEach(function (k) {
        add(c, el('span', { 'class': 'chip cat' }, k.category + ' (' + k.steps + ' steps)'));
      });
      add(s, c);
    }
    if (v.roots.length) {
      add(s, el('h3', {}, 'Roots (most suspicious first)'));
      var ol = el('ol', { id: 'roots' });
      v.roots.forEach(function (r) {
        var li = el('li');
        add(li, el('span', { 'class': 'mono' }, r.name));
        li.appendChild(document.createTextNode((r.bytes ? ', ' + r.bytes + ' B' : '') + ' — ' + r.layer + ' ' + r.measure +
            (r.within ? ' in ' + r.within : '') + ', rank ' + r.ranks.join(',') + ': ' + r.count + ' of ' +
            r.instances + ' instances slower, up to ' + fixed(r.max_ratio, 2) + 'x, +' + ns(r.excess_ns) +
            ' (suspicion ' + fixed(r.suspicion, 1) + ')'));
        add(ol, li);
      });
      add(s, ol);
    }
    if (v.stragglers.length) {
      add(s, el('h3', {}, 'Stragglers (ranks the others waited for)'));
      var ul = el('ul', { id: 'stragglers' });
      v.stragglers.slice(0, 5).forEach(function (x) {
        add(ul, el('li', {}, 'rank ' + x.rank + ', step ' + x.step + ': ' + x.waiting + ' ranks waited ' +
            ns(x.late_ns) + ' in ' + x.collective));
      });
      if (v.stragglers_total > 5) add(ul, el('li', { 'class': 'muted' }, (v.stragglers_total - 5) + ' more'));
      add(s, ul);
    }
  }

  function findings() {
    if (!D.findings.length) return;
    var s = section('findings', 'Failures (' + D.findings.length + ')');
    D.findings.forEach(function (f) {
      var d = el('details', { 'class': 'finding' });
      add(d, el('summary', { 'class': f.severity === 'error' ? 'bad' : 'warn' },
          f.severity + ' · ' + f.category + ' · ' + f.title));
      add(d, el('p', {}, f.explanation));
      if (f.source) add(d, el('p', { 'class': 'muted mono' }, f.source + (f.line ? ':' + f.line : '')));
      if (f.details && f.details.length) add(d, el('pre', { 'class': 'mono' }, f.details.join('\n')));
      add(s, d);
    });
  }

  // One small chart per rank: step duration against time, abnormal steps in red.
  function series() {
    if (!D.series.length) return;
    var s = section('series', 'Step time per rank');
    add(s, legend([['#7f8b99', 'step (duration, log scale, against time)'], ['#d62728', 'abnormal step']]));
    // Durations on a log scale: prefill steps can be ten times a decode step.
    var tmax = 0, dmax = 0, dmin = Infinity;
    D.series.forEach(function (r) {
      r.points.forEach(function (p) {
        tmax = Math.max(tmax, p[0] + p[1]); dmax = Math.max(dmax, p[1]);
        if (p[1] > 0) dmin = Math.min(dmin, p[1]);
      });
    });
    if (!(dmin < dmax)) dmin = dmax / 10 || 1;
    var lmin = Math.log(dmin), lspan = Math.log(dmax) - lmin || 1;
    var grid = el('div', { 'class': 'series-grid' });
    var W = 420, H = 140, L = 52, B = 22, T = 18;
    D.series.forEach(function (r) {
      var g = sv('svg', { width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, 'class': 'series',
        'data-rank': r.rank });
      add(g, sv('text', { x: L, y: 12 }, r.label + ' · ' + r.steps + ' steps' + (r.thinned ? ' (longest per bucket shown)' : '')));
      var x = function (t) { return L + (W - L - 8) * (tmax > 0 ? t / tmax : 0); };
      var y = function (d) { return H - B - (H - B - T) * (Math.log(Math.max(d, dmin)) - lmin) / lspan; };
      add(g, sv('line', { x1: L, y1: H - B, x2: W - 8, y2: H - B, 'class': 'axis' }));
      add(g, sv('line', { x1: L, y1: T, x2: L, y2: H - B, 'class': 'axis' }));
      add(g, sv('text', { x: 2, y: T + 8 }, ns(dmax)));
      add(g, sv('text', { x: 2, y: H - B }, ns(dmin)));
      add(g, sv('text', { x: W - 60, y: H - 6 }, ns(tmax)));
      // Each step a short segment at the height of its duration, from its start to its end.
      var d = r.points.map(function (p) {
        var x0 = x(p[0]), x1 = Math.max(x(p[0] + p[1]), x0 + 0.8), yy = y(p[1]).toFixed(1);
        return 'M' + x0.toFixed(1) + ' ' + yy + 'H' + x1.toFixed(1);
      });
      add(g, sv('path', { d: d.join(''), fill: 'none', stroke: '#7f8b99', 'stroke-width': 2 }));
      r.points.forEach(function (p) {
        if (!p[2]) return;
        var c = sv('circle', { cx: x(p[0]).toFixed(1), cy: y(p[1]).toFixed(1), r: 3, fill: '#d62728',
          'class': 'abnormal-point' });
        add(c, sv('title', {}, 'step ' + p[3] + ': ' + ns(p[1])));
        add(g, c);
      });
      add(grid, g);
    });
    add(s, grid);
  }

  function evidenceTable(parent, id, list, consequence) {
    var cols = [
      { key: 'rank', title: 'rank', num: true },
      { key: 'layer', title: 'layer' },
      { key: 'name', title: 'operator', cls: 'name mono' },
      { key: 'time_ns', title: 'time', num: true, fmt: ns },
      { key: 'expected_ns', title: 'expected', num: true, fmt: ns },
      { key: 'ratio', title: 'ratio', num: true, fmt: function (v) { return fixed(v, 2) + 'x'; } },
      { key: 'excess_ns', title: consequence ? 'waited' : 'excess', num: true, fmt: ns }
    ];
    if (consequence) cols.push({ key: 'waited_for_rank', title: 'for rank', num: true,
      fmt: function (v) { return v < 0 ? 'not in trace' : v; } });
    // How many peers and where from ("replaced": the work an operator the baseline never
    // ran took the place of, its expected time a share of what that work took there).
    else cols.push({ key: 'peers', title: 'peers', num: true,
      fmt: function (v, r) { return v + ' ' + r.source; } });
    return table(parent, id, cols, list, 10);
  }

  // The step on every rank, one lane per host thread and GPU stream; slices nest by depth
  // on host lanes. Roots red, consequences orange, their call paths blue.
  function timeline(parent, st, k) {
    var tl = st.timeline;
    var lanes = tl.lanes;
    var rows = [];
    lanes.forEach(function (l) {
      var depth = 0;
      l.items.forEach(function (it) { depth = Math.max(depth, it[4]); });
      rows.push({ lane: l, depth: Math.min(depth, 7) + 1 });
    });
    rows.forEach(function (r) {
      // At least a label's height per lane.
      r.height = Math.max(r.depth * 9, 13);
    });
    var W = 1100, L = 260, RH = 9, GAP = 6, T = 20;
    var H = T + 10;
    rows.forEach(function (r) { r.y = H; H += r.height + GAP; });
    var g = sv('svg', { width: '100%', viewBox: '0 0 ' + W + ' ' + H, 'class': 'timeline',
      id: 'timeline-' + k, preserveAspectRatio: 'xMinYMin meet' });
    var span = Math.max(1, tl.t1 - tl.t0);
    var x = function (t) { return L + (W - L - 6) * (t - tl.t0) / span; };
    add(g, sv('text', { x: L, y: 12 }, ns(0)));
    add(g, sv('text', { x: W - 70, y: 12 }, ns(span)));
    rows.forEach(function (r) {
      add(g, sv('text', { x: 2, y: r.y + 8, 'class': r.lane.gpu ? 'gpu-lane' : 'host-lane' },
          r.lane.label.length > 44 ? r.lane.label.slice(0, 20) + '…' + r.lane.label.slice(-23) : r.lane.label));
      add(g, sv('line', { x1: L, y1: r.y + r.height + 2, x2: W, y2: r.y + r.height + 2, 'class': 'grid' }));
      // Others first, so that the evidence is drawn on top.
      var items = r.lane.items.slice().sort(function (a, b) { return a[3] === b[3] ? 0 : (a[3] === 0 ? -1 : 1); });
      items.forEach(function (it) {
        var x0 = x(it[0]), w = Math.max(0.6, x(it[0] + it[1]) - x0);
        var rect = sv('rect', { x: x0.toFixed(2), y: r.y + Math.min(it[4], 7) * RH, width: w.toFixed(2),
          height: RH - 1, fill: ROLE_COLOR[it[3]], 'class': 'slice role-' + it[3] });
        add(rect, sv('title', {}, D.names[it[2]] + ' (' + it[5] + ') ' + ns(it[1]) + ' · ' + ROLE_NAME[it[3]]));
        add(g, rect);
      });
    });
    add(parent, legend([[ROLE_COLOR[1], ROLE_NAME[1]], [ROLE_COLOR[2], ROLE_NAME[2]],
      [ROLE_COLOR[3], ROLE_NAME[3]], [ROLE_COLOR[0], ROLE_NAME[0]]]));
    add(parent, g);
    if (tl.items_shown < tl.items_total) {
      add(parent, el('p', { 'class': 'muted' }, tl.items_shown + ' of ' + tl.items_total +
          ' slices drawn: the evidence, its call paths and the longest others.'));
    }
  }

  // Each rank's arrival (kernel start) and end in a collective; the last to arrive is late.
  function collectives(parent, list, k) {
    if (!list || !list.length) return;
    add(parent, el('h3', {}, 'Collective arrival per rank'));
    list.forEach(function (c, ci) {
      var t0 = Infinity, t1 = -Infinity, late = null;
      c.members.forEach(function (m) {
        t0 = Math.min(t0, m[1]); t1 = Math.max(t1, m[2]);
        if (late === null || m[1] > late[1]) late = m;
      });
      var W = 700, L = 70, RH = 14, H = 18 + c.members.length * RH + 16;
      var g = sv('svg', { width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, 'class': 'collective',
        id: 'collective-' + k + '-' + ci });
      add(g, sv('text', { x: 2, y: 12 }, c.name.length > 100 ? c.name.slice(0, 97) + '…' : c.name));
      var span = Math.max(1, t1 - t0);
      var x = function (t) { return L + (W - L - 10) * (t - t0) / span; };
      c.members.slice().sort(function (a, b) { return a[0] - b[0]; }).forEach(function (m, i) {
        var y = 18 + i * RH;
        add(g, sv('text', { x: 2, y: y + 10 }, 'rank ' + m[0]));
        var isLate = m === late;
        var rect = sv('rect', { x: x(m[1]).toFixed(2), y: y + 2, width: Math.max(0.8, x(m[2]) - x(m[1])).toFixed(2),
          height: RH - 4, fill: isLate ? '#d62728' : '#7f8b99', 'class': isLate ? 'late' : 'arrived' });
        add(rect, sv('title', {}, 'rank ' + m[0] + ' arrived at +' + ns(m[1] - t0) + ', ended +' + ns(m[2] - t0)));
        add(g, rect);
      });
      add(g, sv('text', { x: L, y: H - 3 }, 'last to arrive: rank ' + late[0] + ', ' + ns(late[1] - t0) +
          ' after the first'));
      add(parent, g);
    });
  }

  function steps() {
    if (!D.steps.length) return;
    var s = section('steps', 'Abnormal steps');
    var rows = D.steps.map(function (st, i) {
      var top = st.evidence[0];
      return { i: i, label: st.label, kind: st.kind, score: st.score, fault_type: st.fault_type,
        duration_ns: st.duration_ns, excess_ns: st.excess_ns, start_ns: st.start_ns,
        top: top ? top.name + ' (rank ' + top.rank + ')' : '', ranks: st.ranks.join(',') };
    });
    table(s, 'steps-table', [
      { key: 'label', title: 'step' }, { key: 'kind', title: 'kind' },
      { key: 'score', title: 'score', num: true, fmt: function (v) { return fixed(v, 2); } },
      { key: 'fault_type', title: 'category' },
      { key: 'start_ns', title: 'at', num: true, fmt: ns },
      { key: 'duration_ns', title: 'duration', num: true, fmt: ns },
      { key: 'excess_ns', title: 'root excess', num: true, fmt: ns },
      { key: 'top', title: 'top root', cls: 'name mono' }
    ], rows, 15);
    D.steps.forEach(function (st, k) {
      if (!st.timeline) return;
      var d = el('details', { 'class': 'step', id: 'step-' + k });
      if (k < 3) d.open = true;
      add(d, el('summary', {}, st.label + ' · score ' + fixed(st.score, 2) + ' · ' + st.fault_type +
          ' · ' + ns(st.duration_ns) + ' (+' + ns(st.excess_ns) + ')'));
      add(d, el('p', {}, st.explanation));
      add(d, el('h3', {}, 'Roots (evidence)'));
      evidenceTable(d, 'evidence-' + k, st.evidence, false);
      if (st.consequences.length) {
        add(d, el('h3', {}, 'Consequences (waited for a late rank)'));
        evidenceTable(d, 'consequences-' + k, st.consequences, true);
      }
      add(d, el('h3', {}, 'Timeline of the step per rank and stream'));
      timeline(d, st, k);
      if (st.evidence.length) {
        add(d, el('h3', {}, 'Call path of the top evidence'));
        st.evidence.slice(0, 3).forEach(function (e) {
          var ol = el('ol', { 'class': 'path' });
          e.path.forEach(function (p) {
            add(ol, el('li', { 'class': 'mono' }, p[1] + ' · ' + p[0] + ' · ' + ns(p[2])));
          });
          add(d, ol);
        });
      }
      collectives(d, st.collectives, k);
      if (st.logs.length) {
        add(d, el('h3', {}, 'Aligned log lines (' + st.logs_total + ')'));
        var ul = el('ul', { 'class': 'logs mono' });
        st.logs.forEach(function (l) {
          add(ul, el('li', { 'class': 'log-' + l.level }, l.level + ' ' + l.file + ':' + l.line + ' ' + l.message));
        });
        add(d, ul);
      }
      add(s, d);
    });
  }

  // What the log lines say (docs/report.md, "Log evidence"): requests that waited far
  // longer than their peers, lines of rare or new templates, abnormal log periods and
  // failures read from log lines; each with its line, time, step (a link to its section
  // when it has one) and request.
  var LOG_KIND = { request_latency: 'request wait', request_route: 'never prefilled',
    rare_template: 'rare template',
    log_period: 'log period', log_error: 'log failure' };
  function logEvidence() {
    if (!D.log_evidence || !D.log_evidence.length) return;
    var s = section('log-evidence', 'Log evidence (' + D.log_evidence.length + ')');
    add(s, el('p', { 'class': 'muted' }, 'Requests whose own log lines show them waiting far ' +
        'longer than their peers, new requests first run without a prefill, lines of ' +
        'templates the log rarely prints, abnormal periods ' +
        'of the log and failures its lines report.'));
    var rows = D.log_evidence.map(function (e, i) {
      var what;
      if (e.kind === 'request_latency') {
        what = e.interval + ' ' + ns(e.time_ns) + ' against ' + ns(e.expected_ns) + ' for ' +
            e.peers + ' peers (z ' + fixed(e.z, 1) + ')';
      } else if (e.kind === 'request_route') {
        what = 'first run in a ' + (e.step_kind ? e.step_kind + ' step' : 'step') +
            ' without a prefill (' + e.peers + ' requests prefilled first)';
      } else if (e.kind === 'rare_template') {
        what = (e.new ? 'new template #' : 'template #') + e.template_id + ' (' + e.template_lines +
            ' line' + (e.template_lines === 1 ? '' : 's') + '): ' + e.template;
      } else {
        what = e.severity + ' · ' + e.category + ' · ' + e.title;
      }
      return { i: i, kind: LOG_KIND[e.kind] || e.kind, step_label: e.step_label, step: e.step,
        detailed: e.detailed, request: e.request, ts_ns: e.ts_ns, level: e.level,
        where: e.file + (e.line ? ':' + e.line : ''), what: what, message: e.message };
    });
    table(s, 'log-evidence-table', [
      { key: 'kind', title: 'kind' },
      { key: 'step_label', title: 'step', fmt: function (v, r) {
        if (!r.detailed) return v;
        var a = el('a', { href: '#step-' + r.step, 'class': 'step-link' }, v);
        a.addEventListener('click', function () {
          var d = document.getElementById('step-' + r.step);
          if (d) d.open = true;
        });
        return a;
      } },
      { key: 'request', title: 'request', cls: 'mono' },
      { key: 'ts_ns', title: 'at', num: true, fmt: ns },
      { key: 'level', title: 'level' },
      { key: 'where', title: 'file:line', cls: 'mono' },
      { key: 'what', title: 'evidence', cls: 'name' },
      { key: 'message', title: 'log line', cls: 'name mono' }
    ], rows, 25);
  }

  function operators() {
    if (!D.operators.length && !D.top_operators.length) return;
    var s = section('operators', 'Operators against their peers');
    if (D.top_operators.length) {
      add(s, el('h3', {}, 'Top operators of the whole trace (most suspicious first)'));
      table(s, 'top-operators-table', [
        { key: 'name', title: 'operator', cls: 'name mono' }, { key: 'layer', title: 'layer' },
        { key: 'measure', title: 'measure' },
        { key: 'bytes', title: 'size', num: true, fmt: function (v) { return v ? v + ' B' : ''; } },
        { key: 'suspicion', title: 'suspicion', num: true, fmt: function (v) { return fixed(v, 1); } },
        { key: 'count', title: 'slower', num: true },
        { key: 'instances', title: 'instances', num: true },
        { key: 'median_ns', title: 'median', num: true, fmt: ns },
        { key: 'excess_ns', title: 'excess', num: true, fmt: ns },
        { key: 'max_ratio', title: 'max ratio', num: true, fmt: function (v) { return fixed(v, 2) + 'x'; } },
        { key: 'ranks', title: 'ranks', fmt: function (v) { return v.join(','); } }
      ], D.top_operators, 10);
    }
    if (!D.operators.length) return;
    add(s, el('h3', {}, 'Evidence of the abnormal steps by operator'));
    add(s, el('p', { 'class': 'muted' }, 'The evidence of the abnormal steps by operator: time against ' +
        'the peers\' median (' + (D.meta.mode === 'baseline' ? 'from the baseline' : 'from this trace') +
        '). Click a column to sort.'));
    table(s, 'operators-table', [
      { key: 'family', title: 'operator', cls: 'name mono' }, { key: 'layer', title: 'layer' },
      { key: 'measure', title: 'measure' },
      { key: 'count', title: 'count', num: true },
      { key: 'total_ns', title: 'total', num: true, fmt: ns },
      { key: 'median_ns', title: 'median', num: true, fmt: ns },
      { key: 'expected_ns', title: 'peers', num: true, fmt: ns },
      { key: 'excess_ns', title: 'excess', num: true, fmt: ns },
      { key: 'ratio', title: 'ratio', num: true, fmt: function (v) { return fixed(v, 2) + 'x'; } },
      { key: 'suspicion', title: 'suspicion', num: true, fmt: function (v) { return fixed(v, 1); } },
      { key: 'ranks', title: 'ranks', fmt: function (v) { return v.join(','); } }
    ], D.operators, 25);
  }

  // Log-spaced bins; each series scaled to its own largest bin so a few abnormal
  // instances stay visible beside thousands of peers.
  function distributions() {
    if (!D.distributions.length) return;
    var s = section('distributions', 'Duration distributions of the top roots');
    add(s, legend([['#7f8b99', 'peers (other instances)'], ['#d62728', 'evidence instances']]));
    D.distributions.forEach(function (dist, k) {
      var all = dist.peers.concat(dist.abnormal).filter(function (v) { return v > 0; });
      if (!all.length) return;
      var lo = Math.log10(Math.min.apply(null, all)), hi = Math.log10(Math.max.apply(null, all));
      if (hi - lo < 1e-6) { lo -= 0.5; hi += 0.5; }
      var N = 40;
      function bins(v) {
        var b = new Array(N).fill(0);
        v.forEach(function (x) {
          if (x <= 0) return;
          var i = Math.floor((Math.log10(x) - lo) / (hi - lo) * N);
          b[Math.max(0, Math.min(N - 1, i))]++;
        });
        return b;
      }
      var bp = bins(dist.peers), ba = bins(dist.abnormal);
      var mp = Math.max.apply(null, bp) || 1, ma = Math.max.apply(null, ba) || 1;
      var W = 640, H = 150, L = 10, B = 22, T = 18, bw = (W - 2 * L) / N;
      var g = sv('svg', { width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, 'class': 'distribution',
        id: 'distribution-' + k });
      add(g, sv('text', { x: L, y: 12 }, (dist.name.length > 90 ? dist.name.slice(0, 87) + '…' : dist.name) +
          ' · ' + dist.layer + ' · ' + dist.peers_total + ' peers, ' + dist.abnormal.length + ' evidence'));
      for (var i = 0; i < N; i++) {
        var hp = (H - B - T) * bp[i] / mp, ha = (H - B - T) * ba[i] / ma;
        if (bp[i]) add(g, sv('rect', { x: L + i * bw, y: H - B - hp, width: bw * 0.48, height: hp, fill: '#7f8b99' }));
        if (ba[i]) add(g, sv('rect', { x: L + i * bw + bw * 0.5, y: H - B - ha, width: bw * 0.48, height: ha,
          fill: '#d62728', 'class': 'abnormal-bin' }));
      }
      add(g, sv('line', { x1: L, y1: H - B, x2: W - L, y2: H - B, 'class': 'axis' }));
      add(g, sv('text', { x: L, y: H - 6 }, ns(Math.pow(10, lo))));
      add(g, sv('text', { x: W - 80, y: H - 6 }, ns(Math.pow(10, hi))));
      add(g, sv('text', { x: W / 2 - 70, y: H - 6 }, 'duration (log scale)'));
      add(s, g);
    });
  }

  function logs() {
    var rows = [];
    D.steps.forEach(function (st) {
      st.logs.forEach(function (l) {
        rows.push({ step: st.label, ts_ns: l.ts_ns, level: l.level, where: l.file + ':' + l.line, message: l.message });
      });
    });
    if (!rows.length) return;
    var s = section('logs', 'Log lines aligned to the abnormal steps');
    table(s, 'logs-table', [
      { key: 'step', title: 'step' }, { key: 'ts_ns', title: 'at', num: true, fmt: ns },
      { key: 'level', title: 'level' }, { key: 'where', title: 'file:line', cls: 'mono' },
      { key: 'message', title: 'message', cls: 'name mono' }
    ], rows, 25);
  }

  function counters() {
    var s = section('counters', 'Data quality');
    add(s, el('p', { 'class': 'muted' }, D.meta.processes + ' processes, ' + D.meta.events + ' events, ' +
        D.meta.log_lines + ' log lines. Counters of the import and reconstruction (docs/counters.md):'));
    if (!D.counters.length) { add(s, el('p', {}, 'none: nothing was damaged or dropped.')); return; }
    table(s, 'counters-table', [
      { key: 'name', title: 'counter', cls: 'mono' }, { key: 'value', title: 'value', num: true },
      { key: 'severity', title: 'severity' }, { key: 'description', title: 'what it counts' }
    ], D.counters, 50);
  }

  document.getElementById('sources').textContent = D.meta.sources.join(' ') + ' · mode ' + D.meta.mode +
      (D.meta.scope ? ' · scope ' + D.meta.scope : '');
  verdict();
  findings();
  series();
  steps();
  logEvidence();
  operators();
  distributions();
  logs();
  counters();
  // Milliseconds from navigation to the drawn report (the figure docs/report.md gives).
  document.body.setAttribute('data-render-ms', String(Math.round(performance.now())));
  document.body.setAttribute('data-rendered', 'yes');
})();
