// What ui/e2e/bench.mjs needs besides the browser: the service (fake CLI) in a temporary
// folder, the old dashboard built from a commit and served with a small static server that
// proxies /api to the service, a meter of a page's requests, and the figures' arithmetic.
// Everything started is registered with `cleanup` so it is ended even when a step fails.
import { spawn, execFileSync, execSync } from 'node:child_process';
import { createReadStream, existsSync, mkdirSync, mkdtempSync, openSync, realpathSync, rmSync, statSync, symlinkSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { extname, join, normalize, sep } from 'node:path';

/** Things to undo, last first. `run()` never throws; it also runs on SIGINT/SIGTERM. */
export const cleanup = {
  steps: [],
  add(what, fn) {
    this.steps.push({ what, fn });
  },
  running: null,
  /** One run at a time: a second caller (a signal during a failing step) waits for the first. */
  run() {
    this.running ??= (async () => {
      while (this.steps.length > 0) {
        const { what, fn } = this.steps.pop();
        try {
          await fn();
        } catch (e) {
          console.error(`bench: cleanup of ${what} failed: ${e instanceof Error ? e.message : e}`);
        }
      }
      this.running = null;
    })();
    return this.running;
  },
};
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    console.error(`bench: ${signal}, cleaning up`);
    void cleanup.run().finally(() => process.exit(130));
  });
}
/** Last resort on an abrupt exit: children killed synchronously. */
const children = new Set();
process.on('exit', () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

/** A new temporary folder, removed at cleanup. */
export const tempDir = (prefix) => {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  cleanup.add(`folder ${dir}`, () => rmSync(dir, { recursive: true, force: true }));
  return dir;
};

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Ends a child: SIGTERM, then SIGKILL after `graceMs`; resolves once it has exited. */
const stopChild = async (child, graceMs) => {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
};

/**
 * The service in a fresh folder (database, project root, home) with the fake CLI; resolves
 * with its base URL once it listens. `extraEnv` adds settings.
 */
export const startService = async ({ bin, fakeCli, extraEnv = {} }) => {
  for (const file of [bin, fakeCli]) if (!existsSync(file)) throw new Error(`${file} does not exist (build it first)`);
  const dir = tempDir('conduit-bench-');
  const root = join(dir, 'root');
  mkdirSync(root);
  const env = {
    PATH: process.env.PATH,
    HOME: dir,
    CONDUIT_PORT: '0',
    CONDUIT_DB_PATH: join(dir, 'db.sqlite'),
    CONDUIT_PROJECT_ROOT: root,
    CONDUIT_CLI_PATH: realpathSync(fakeCli),
    ...extraEnv,
  };
  const log = openSync(join(dir, 'service.log'), 'a');
  const child = spawn(realpathSync(bin), ['serve'], { cwd: dir, env, stdio: ['ignore', 'pipe', log] });
  children.add(child);
  // The service ends its CLIs on SIGTERM (5 s grace each, in parallel) before it exits.
  cleanup.add('the service', () => stopChild(child, 20_000));
  const base = await new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error('the service did not say where it listens within 30 s')), 30_000);
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const m = out.match(/listening on (http:\/\/\S+)/);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`the service exited (${code ?? signal}); see ${join(dir, 'service.log')}`));
    });
  });
  child.stdout.resume();
  return { base, dir, root };
};

/**
 * The dashboard as it was at `rev` (the ui/ folder only), built with the checkout's
 * node_modules: returns the `dist` folder.
 */
export const buildOldUi = (checkout, rev) => {
  const dir = tempDir('conduit-bench-old-ui-');
  execSync(`git -C ${JSON.stringify(checkout)} archive ${rev} ui | tar -x -C ${JSON.stringify(dir)}`, { stdio: 'inherit' });
  const ui = join(dir, 'ui');
  const modules = join(checkout, 'ui', 'node_modules');
  if (!existsSync(modules)) throw new Error(`${modules} is missing (cargo build runs npm ci; or run it in ui/)`);
  symlinkSync(realpathSync(modules), join(ui, 'node_modules'));
  // The API types only matter to tsc, but the build of old commits may import the folder.
  if (existsSync(join(ui, 'scripts', 'gen-api.mjs'))) execFileSync('node', ['scripts/gen-api.mjs'], { cwd: ui, stdio: 'inherit' });
  execFileSync(process.execPath, [join(ui, 'node_modules', 'vite', 'bin', 'vite.js'), 'build', '--logLevel', 'warn'], {
    cwd: ui,
    stdio: 'inherit',
  });
  return join(ui, 'dist');
};

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.woff2': 'font/woff2',
};

/**
 * Serves `dist` on a random 127.0.0.1 port (unknown paths get index.html, as the service does)
 * and proxies /api/* to `target` unbuffered (the event stream included). Like the service, no
 * compression. Resolves with its base URL.
 */
export const serveStatic = async (dist, target) => {
  const to = new URL(target);
  const sockets = new Set();
  const server = http.createServer((req, res) => {
    if (req.url.startsWith('/api/')) {
      const headers = { ...req.headers, host: to.host };
      delete headers.origin; // presented as same-origin, as Vite's dev proxy does
      const up = http.request({ host: to.hostname, port: to.port, method: req.method, path: req.url, headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        res.flushHeaders();
        answer.pipe(res);
      });
      up.on('error', () => {
        if (!res.headersSent) res.writeHead(502);
        res.end();
      });
      res.on('close', () => up.destroy());
      req.pipe(up);
      return;
    }
    const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    let file = normalize(join(dist, path));
    if (!file.startsWith(dist + sep) || !existsSync(file) || statSync(file).isDirectory()) file = join(dist, 'index.html');
    const immutable = file.includes(`${sep}assets${sep}`);
    res.writeHead(200, {
      'content-type': TYPES[extname(file)] ?? 'application/octet-stream',
      'content-length': statSync(file).size,
      'cache-control': immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
    });
    createReadStream(file).pipe(res);
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  cleanup.add('the old dashboard server', async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => server.close(r));
  });
  return `http://127.0.0.1:${server.address().port}`;
};

/** Long-lived requests that are not counted: the event stream stays open for the page's life. */
const UNCOUNTED = /\/api\/events\/stream/;

/**
 * Counts a page's requests and the bytes received for them (CDP `Network.loadingFinished`
 * encodedDataLength: headers and body as they came over the wire). `take()` returns what
 * happened since the last `take()` and starts over.
 */
export const meter = async (context, page) => {
  const cdp = await context.newCDPSession(page);
  let requests = new Map();
  cdp.on('Network.requestWillBeSent', (e) => {
    if (!/^https?:/.test(e.request.url) || UNCOUNTED.test(e.request.url)) return;
    requests.set(e.requestId, { url: e.request.url, bytes: 0, done: false });
  });
  cdp.on('Network.loadingFinished', (e) => {
    const r = requests.get(e.requestId);
    if (r) Object.assign(r, { bytes: e.encodedDataLength, done: true });
  });
  cdp.on('Network.loadingFailed', (e) => {
    const r = requests.get(e.requestId);
    if (r) Object.assign(r, { done: true, failed: true });
  });
  await cdp.send('Network.enable');
  return {
    take() {
      const list = [...requests.values()];
      requests = new Map();
      const api = list.filter((r) => new URL(r.url).pathname.startsWith('/api/'));
      const sum = (rs) => rs.reduce((n, r) => n + r.bytes, 0);
      const paths = {};
      const examples = [];
      for (const r of api) {
        const p = new URL(r.url).pathname.replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, '{id}');
        paths[p] = (paths[p] ?? 0) + 1;
        if (!examples.includes(r.url) && examples.length < 12) examples.push(r.url);
      }
      return {
        requests: list.length,
        bytes: sum(list),
        apiRequests: api.length,
        apiBytes: sum(api),
        unfinished: list.filter((r) => !r.done).length,
        failed: list.filter((r) => r.failed).length,
        apiPaths: paths,
        apiExamples: examples.map((u) => u.replace(/^https?:\/\/[^/]+/, '')),
      };
    },
  };
};

/** Nearest-rank percentile of sorted numbers. */
export const percentile = (sorted, p) => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]);

/** Prints the figures as a table: figure, old, new, new/old. */
export const printTable = (rows) => {
  const fmt = (v) => (v === null || v === undefined || Number.isNaN(v) ? 'n/a' : Number.isInteger(v) ? String(v) : v.toFixed(1));
  const ratio = (o, n) => (typeof o !== 'number' || typeof n !== 'number' || o === 0 ? 'n/a' : `${(n / o).toFixed(3)}x`);
  const table = [['figure', 'old', 'new', 'new/old'], ...rows.map((r) => [r.figure, fmt(r.old), fmt(r.new), ratio(r.old, r.new)])];
  const widths = table[0].map((_, i) => Math.max(...table.map((row) => row[i].length)));
  for (const [i, row] of table.entries()) {
    console.log(row.map((cell, j) => (j === 0 ? cell.padEnd(widths[j]) : cell.padStart(widths[j]))).join('  '));
    if (i === 0) console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  }
};

export { sleep };
