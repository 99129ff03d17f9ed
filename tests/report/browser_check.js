#!/usr/bin/env node
// Opens a page in headless Chromium and checks it as a person would see it: no console
// errors or uncaught exceptions, the elements that must be there are there, and a
// screenshot that is not blank. Speaks the DevTools protocol over --remote-debugging-pipe
// (file descriptors 3 and 4), so it needs nothing beyond node and chromium.
//
// usage: node browser_check.js --chromium PATH --url URL [--screenshot FILE.png]
//          [--ready JS] [--expect NAME=JS]... [--serve DIR] [--timeout S] [--size WxH]
//          [--clip X,Y,W,H]
//   --ready JS       an expression that is true once the page has drawn itself
//   --expect NAME=JS an expression that must be true once ready (printed as NAME)
//   --serve DIR      serve DIR on 127.0.0.1 and open URL relative to it (for pages that
//                    fetch their input, which file:// forbids)
//   --clip X,Y,W,H   the screenshot shows this part of the page (CSS pixels, beyond the
//                    window if need be) instead of the window
// Exit status: 0 all checks passed, 1 a check failed, 2 usage or browser trouble.
'use strict';
const { spawn } = require('child_process');
const fs = require('fs');
const http = require('http');
const os = require('os');
const path = require('path');
const zlib = require('zlib');

function parseArgs(argv) {
  const a = { expect: [], timeout: 20, size: '1400,1800' };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i], v = argv[i + 1];
    if (k === '--chromium') a.chromium = v;
    else if (k === '--url') a.url = v;
    else if (k === '--screenshot') a.screenshot = v;
    else if (k === '--ready') a.ready = v;
    else if (k === '--expect') a.expect.push(v);
    else if (k === '--serve') a.serve = v;
    else if (k === '--timeout') a.timeout = Number(v);
    else if (k === '--size') a.size = v.replace('x', ',');
    else if (k === '--clip') a.clip = v.split(',').map(Number);
    else { console.error('browser_check: unknown argument ' + k); process.exit(2); }
    i++;
  }
  if (!a.chromium || !a.url) { console.error('browser_check: --chromium and --url are required'); process.exit(2); }
  return a;
}

// The share of pixels that differ from the most common colour: 0 for a blank image.
function inkShare(png) {
  let off = 8, width = 0, height = 0, type = 0, depth = 0;
  const idat = [];
  while (off < png.length) {
    const len = png.readUInt32BE(off);
    const name = png.toString('ascii', off + 4, off + 8);
    const body = png.subarray(off + 8, off + 8 + len);
    if (name === 'IHDR') {
      width = body.readUInt32BE(0); height = body.readUInt32BE(4); depth = body[8]; type = body[9];
    } else if (name === 'IDAT') idat.push(body);
    off += 12 + len;
  }
  if (depth !== 8 || (type !== 2 && type !== 6)) throw new Error('unexpected PNG format ' + type + '/' + depth);
  const bpp = type === 6 ? 4 : 3, stride = width * bpp;
  const raw = zlib.inflateSync(Buffer.concat(idat));
  const out = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    const f = raw[y * (stride + 1)];
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let x = 0; x < stride; x++) {
      const a = x >= bpp ? out[y * stride + x - bpp] : 0;
      const b = y > 0 ? out[(y - 1) * stride + x] : 0;
      const c = x >= bpp && y > 0 ? out[(y - 1) * stride + x - bpp] : 0;
      let p = 0;
      if (f === 1) p = a; else if (f === 2) p = b; else if (f === 3) p = (a + b) >> 1;
      else if (f === 4) { const pa = Math.abs(b - c), pb = Math.abs(a - c), pc = Math.abs(a + b - 2 * c); p = pa <= pb && pa <= pc ? a : pb <= pc ? b : c; }
      out[y * stride + x] = (line[x] + p) & 255;
    }
  }
  const counts = new Map();
  for (let i = 0; i < out.length; i += bpp) {
    const key = (out[i] << 16) | (out[i + 1] << 8) | out[i + 2];
    counts.set(key, (counts.get(key) || 0) + 1);
  }
  let top = 0;
  for (const n of counts.values()) top = Math.max(top, n);
  return { share: 1 - top / (width * height), colours: counts.size, width, height };
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  let server = null, url = a.url;
  if (a.serve) {
    const root = path.resolve(a.serve);
    server = http.createServer((req, res) => {
      const p = path.join(root, decodeURIComponent(req.url.split('?')[0].split('#')[0]));
      if (!p.startsWith(root) || !fs.existsSync(p) || fs.statSync(p).isDirectory()) { res.writeHead(404); res.end(); return; }
      const types = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.json': 'application/json', '.wasm': 'application/wasm', '.png': 'image/png' };
      res.writeHead(200, { 'Content-Type': types[path.extname(p)] || 'application/octet-stream' });
      fs.createReadStream(p).pipe(res);
    });
    await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
    url = 'http://127.0.0.1:' + server.address().port + '/' + a.url.replace(/^\//, '');
  }
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'teller-browser-'));
  const chrome = spawn(a.chromium, ['--headless=new', '--no-sandbox', '--disable-gpu', '--no-first-run',
    '--disable-extensions', '--disable-background-networking', '--hide-scrollbars', '--remote-debugging-pipe',
    '--user-data-dir=' + profile, '--window-size=' + a.size, 'about:blank'],
    { stdio: ['ignore', 'ignore', 'ignore', 'pipe', 'pipe'] });
  const toChrome = chrome.stdio[3], fromChrome = chrome.stdio[4];
  let nextId = 1, buffered = '';
  const pending = new Map(), listeners = [];
  fromChrome.on('data', (chunk) => {
    buffered += chunk.toString('utf8');
    let end;
    while ((end = buffered.indexOf('\0')) >= 0) {
      const msg = JSON.parse(buffered.slice(0, end));
      buffered = buffered.slice(end + 1);
      if (msg.id && pending.has(msg.id)) { pending.get(msg.id)(msg); pending.delete(msg.id); } else listeners.forEach((l) => l(msg));
    }
  });
  const send = (method, params, sessionId) => new Promise((ok, fail) => {
    const id = nextId++;
    pending.set(id, (m) => (m.error ? fail(new Error(method + ': ' + m.error.message)) : ok(m.result)));
    toChrome.write(JSON.stringify({ id, method, params: params || {}, sessionId }) + '\0');
  });
  const errors = [];
  let loaded = false;
  listeners.push((m) => {
    if (m.method === 'Runtime.exceptionThrown') errors.push('exception: ' + (m.params.exceptionDetails.exception ? m.params.exceptionDetails.exception.description : m.params.exceptionDetails.text));
    if (m.method === 'Runtime.consoleAPICalled' && (m.params.type === 'error' || m.params.type === 'assert')) errors.push('console.' + m.params.type + ': ' + m.params.args.map((x) => x.value || x.description).join(' '));
    if (m.method === 'Log.entryAdded' && m.params.entry.level === 'error') errors.push('log: ' + m.params.entry.text + ' ' + (m.params.entry.url || ''));
    if (m.method === 'Page.loadEventFired') loaded = true;
  });
  const deadline = Date.now() + a.timeout * 1000;
  const fail = (why, code) => { console.error('browser_check: ' + why); finish(code || 1); };
  function finish(code) {
    if (server) server.close();
    // The profile folder goes once the browser is gone (it writes there until then).
    // Chromium's helper processes can outlive the main one for a moment and still write
    // into the folder (rmdir then fails with ENOTEMPTY): the removal is retried, and a
    // folder that still cannot go is left in the temporary directory rather than turning
    // the check's verdict into a failure.
    chrome.once('exit', () => {
      try {
        fs.rmSync(profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
      } catch (e) {
        console.error('browser_check: could not remove ' + profile + ': ' + e.code);
      }
      process.exit(code);
    });
    chrome.kill('SIGKILL');
  }
  const timer = setTimeout(() => fail('timed out after ' + a.timeout + ' s', 1), a.timeout * 1000);
  try {
    const { targetInfos } = await send('Target.getTargets');
    const page = targetInfos.find((t) => t.type === 'page');
    if (!page) return fail('no page target', 2);
    const { sessionId } = await send('Target.attachToTarget', { targetId: page.targetId, flatten: true });
    const s = (m, p) => send(m, p, sessionId);
    await s('Runtime.enable'); await s('Log.enable'); await s('Page.enable');
    await s('Page.navigate', { url });
    while (!loaded && Date.now() < deadline) await new Promise((ok) => setTimeout(ok, 50));
    const evaluate = async (expr) => {
      const r = await s('Runtime.evaluate', { expression: expr, returnByValue: true });
      if (r.exceptionDetails) throw new Error('evaluating ' + expr + ': ' + r.exceptionDetails.text);
      return r.result.value;
    };
    if (a.ready) {
      while (!(await evaluate('!!(' + a.ready + ')'))) {
        if (Date.now() > deadline) return fail('page never ready: ' + a.ready);
        await new Promise((ok) => setTimeout(ok, 100));
      }
    }
    let bad = 0;
    for (const e of a.expect) {
      const at = e.indexOf('=');
      const name = e.slice(0, at), expr = e.slice(at + 1);
      const v = await evaluate(expr);
      console.log((v ? 'ok   ' : 'FAIL ') + name + ' (' + JSON.stringify(v) + ')');
      if (!v) bad++;
    }
    if (a.screenshot) {
      const shot = { format: 'png' };
      if (a.clip) {
        shot.clip = { x: a.clip[0], y: a.clip[1], width: a.clip[2], height: a.clip[3], scale: 1 };
        shot.captureBeyondViewport = true;
      }
      const { data } = await s('Page.captureScreenshot', shot);
      const png = Buffer.from(data, 'base64');
      fs.writeFileSync(a.screenshot, png);
      const ink = inkShare(png);
      const blank = ink.share < 0.02 || ink.colours < 8;
      console.log((blank ? 'FAIL ' : 'ok   ') + 'screenshot ' + ink.width + 'x' + ink.height + ', ' +
          (100 * ink.share).toFixed(1) + '% drawn, ' + ink.colours + ' colours');
      if (blank) bad++;
    }
    for (const e of errors) console.log('FAIL ' + e);
    bad += errors.length;
    clearTimeout(timer);
    finish(bad ? 1 : 0);
  } catch (e) {
    fail(e.message, 2);
  }
}

main();
