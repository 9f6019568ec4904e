// The dashboard's cost in a browser, the new dashboard against the old one (commit
// BENCH_BASELINE, b960e26: it read the REST API again after every event) in the same run, in
// headless Chromium at 1440x900 against one service driving the fake CLI:
//
// 1. the dashboard with BENCH_PROJECTS (24) projects, each with one idle session: requests and
//    bytes to open it, and those caused by one turn in one of those sessions (sent through the
//    API; counted until the turn has ended and 2 s more have passed);
// 2. the session page of a session with ~1,000 stored lines (BENCH_TURNS turns of the default
//    fake model; the old page reads at most 1,000): requests and bytes to open it, and per turn
//    in that session while it is open;
// 3. from a line written by the CLI to its text on screen: a turn of 400 text deltas at 200
//    lines/s (`fake-rate-200-400`, each line carrying its write time), every `t{i}` timed when it
//    first appears in the page (a MutationObserver). The old page shows no deltas, only the
//    whole message once stored: its figure is that message's appearance after the LAST line
//    was written. The new page's final message is timed the same way too.
//
// Requests and bytes are counted with CDP (`Network.loadingFinished` encodedDataLength: headers
// and body received), every request but the long-lived `/api/events/stream`; each page is
// opened in a fresh browser context (empty cache). Prints a table and writes
// target/bench/dashboard.json. Run by `scripts/bench.sh dashboard` after a release build;
// CONDUIT_BIN and FAKE_CLI override the binaries, CHROMIUM_PATH the browser.
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { apiClient, expectText, launchOptions, until, watch } from './lib.mjs';
import { buildOldUi, cleanup, meter, percentile, printTable, serveStatic, sleep, startService } from './benchlib.mjs';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = process.env.CONDUIT_BIN ?? join(repo, 'target/release/conduit');
const FAKE_CLI = process.env.FAKE_CLI ?? join(repo, 'target/release/examples/fake_cli');
const BASELINE = process.env.BENCH_BASELINE ?? 'b960e26';
const PROJECTS = Number(process.env.BENCH_PROJECTS ?? 24);
// 4 lines at launch and 4 per turn: 249 turns make exactly the 1,000 lines the old page reads.
const TURNS = Number(process.env.BENCH_TURNS ?? 249);
const SETTLE_MS = 2000;
const RATE_MODEL = 'fake-rate-200-400';
const DELTAS = 400;
const LATENCY_TURNS = Number(process.env.BENCH_LATENCY_TURNS ?? 3);
const OUT = join(repo, 'target', 'bench', 'dashboard.json');

const log = (text) => console.log(`bench: ${text}`);
const errors = [];

const main = async () => {
  log(`building the old dashboard (${BASELINE})`);
  const oldDist = buildOldUi(repo, BASELINE);
  const service = await startService({ bin: BIN, fakeCli: FAKE_CLI, extraEnv: { CONDUIT_MAX_SESSIONS_GLOBAL: '100' } });
  const api = apiClient(service.base);
  const uis = { old: await serveStatic(oldDist, service.base), new: service.base };
  log(`service ${service.base}, old dashboard ${uis.old}`);
  // Playwright's own signal handlers would exit at once: the cleanup closes the browser instead.
  const browser = await chromium.launch({ ...launchOptions(), handleSIGINT: false, handleSIGTERM: false, handleSIGHUP: false });
  cleanup.add('Chromium', () => browser.close());

  // --- the API side -------------------------------------------------------------------------
  const session = (id) => api('GET', `/api/sessions/${id}`);
  const project = async (name) => {
    const folder = join(service.root, name);
    mkdirSync(folder, { recursive: true });
    return api('POST', '/api/projects', { name, folder_path: folder });
  };
  const launch = async (projectId, body) => {
    const s = await api('POST', `/api/projects/${projectId}/sessions`, body);
    await until(`session ${s.name} becomes idle`, async () => (await session(s.id)).status === 'idle', 30_000, 50);
    return s;
  };
  /** Sends `count` turns (queued, at most 50 at a time) and resolves once all have ended. */
  const turns = async (id, count, text = (n) => `turn ${n}`) => {
    let done = (await session(id)).num_turns;
    const target = done + count;
    while (done < target) {
      const batch = Math.min(50, target - done);
      for (let i = 1; i <= batch; i++) await api('POST', `/api/sessions/${id}/message`, { content: text(done + i) });
      const goal = done + batch;
      await until('the turns end', async () => {
        const s = await session(id);
        return s.num_turns >= goal && s.status === 'idle';
      }, 120_000, 50);
      done = goal;
    }
  };
  const lineCount = async (id) => {
    let n = 0;
    for (let offset = 0; ; offset += 1000) {
      const page = await api('GET', `/api/sessions/${id}/messages?limit=1000&offset=${offset}`);
      n += page.length;
      if (page.length < 1000) return n;
    }
  };

  // --- the browser side ---------------------------------------------------------------------
  const open = async (ui, path, init) => {
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    const page = watch(await context.newPage(), errors, `${ui} ${path}`);
    if (init) await page.addInitScript(init.fn, init.arg);
    const net = await meter(context, page);
    await page.goto(uis[ui] + path);
    await expectText(page.getByTestId('connection'), 'Live', 30_000);
    return { context, page, net };
  };
  /** One turn through the API while a page is open: what it cost the page, settle included. */
  const turnCost = async (net, sessionId, text) => {
    net.take();
    await turns(sessionId, 1, () => text);
    await sleep(SETTLE_MS);
    return net.take();
  };
  const results = { old: {}, new: {} };

  // 1. The dashboard.
  log(`dashboard: ${PROJECTS} projects with an idle session each`);
  const dashboardSessions = [];
  for (let i = 1; i <= PROJECTS; i++) {
    const p = await project(`bench-${String(i).padStart(2, '0')}`);
    dashboardSessions.push(await launch(p.id, { name: `idle ${i}` }));
  }
  for (const ui of ['old', 'new']) {
    const { context, page, net } = await open(ui, '/');
    await until(`the ${ui} dashboard lists ${PROJECTS} projects`, async () => (await page.getByTestId('project-list').locator('a').count()) >= PROJECTS, 30_000);
    await sleep(SETTLE_MS);
    const opened = net.take();
    const turn = await turnCost(net, dashboardSessions[0].id, `a turn seen from the ${ui} dashboard`);
    results[ui].dashboard = { open: opened, turn };
    log(`dashboard ${ui}: open ${opened.requests} requests, a turn ${turn.requests} requests ${JSON.stringify(turn.apiPaths)}`);
    await context.close();
  }

  // 2. The session page of a long session.
  log(`session page: ${TURNS} turns`);
  const long = await project('bench-long');
  const longSession = await launch(long.id, { name: 'long session' });
  await turns(longSession.id, TURNS);
  const lines = await lineCount(longSession.id);
  // The old page reads the first 1,000 lines: the last assistant text among them is what it shows last.
  const firstPage = await api('GET', `/api/sessions/${longSession.id}/messages?limit=1000`);
  const lastEcho = (rows) => JSON.parse(rows.filter((r) => r.message_type === 'assistant').at(-1).content).message.content[0].text;
  const shownLast = { old: lastEcho(firstPage), new: `echo: turn ${TURNS}` };
  log(`session page: ${lines} lines stored`);
  for (const ui of ['old', 'new']) {
    const { context, page, net } = await open(ui, `/sessions/${longSession.id}`);
    await expectText(page.locator('.entry-assistant'), shownLast[ui], 30_000);
    await sleep(SETTLE_MS);
    const opened = net.take();
    const text = `a turn seen from the ${ui} session page`;
    const turn = await turnCost(net, longSession.id, text);
    if (ui === 'new') await expectText(page.locator('.entry-assistant'), `echo: ${text}`, 5_000);
    results[ui].session = { lines, open: opened, turn };
    log(`session ${ui}: open ${opened.requests} requests, a turn ${turn.requests} requests ${JSON.stringify(turn.apiPaths)}`);
    await context.close();
  }

  // 3. Latency from a written line to its text on screen: LATENCY_TURNS turns per dashboard,
  // alternating, each in a fresh session (ended afterwards) of a project of its own.
  const latencyProject = await project('bench-latency');
  const samples = { old: [], new: [] };
  for (let k = 1; k <= LATENCY_TURNS; k++) {
    for (const ui of ['old', 'new']) {
      const sample = await latencyTurn(ui, k);
      samples[ui].push(sample);
      log(`latency ${ui} #${k}: ${JSON.stringify({ ...sample, lat: undefined })}`);
    }
  }
  for (const ui of ['old', 'new']) {
    const all = samples[ui];
    const lat = all.flatMap((x) => x.lat).sort((a, b) => a - b);
    const finals = all.map((x) => x.finalMessageMs).filter((v) => v !== null).sort((a, b) => a - b);
    const sum = (f) => all.reduce((n, x) => n + (f(x) ?? 0), 0);
    results[ui].latency = {
      turns: all.length,
      deltas: DELTAS * all.length,
      tokensSeen: sum((x) => x.tokensSeen),
      lostInTheMiddle: lat.length ? sum((x) => x.lostInTheMiddle) : null,
      lostTrailing: lat.length ? sum((x) => x.lostTrailing) : null,
      deltaMs: lat.length ? stats(lat) : null,
      finalMessageMs: finals.length ? stats(finals) : null,
      finalMessagesMissing: all.length - finals.length,
      perTurn: all.map(({ lat: _, ...rest }) => rest),
    };
  }

  async function latencyTurn(ui, k) {
    const s = await launch(latencyProject.id, { name: `latency ${ui} ${k}`, model: RATE_MODEL });
    const text = `latency probe ${ui} ${'abc'[k % 3]}`; // no "t<digits>" in it
    const { context, page } = await open(ui, `/sessions/${s.id}`, { fn: observeTokens, arg: `echo: ${text}` });
    await expectText(page.locator('h1'), `latency ${ui} ${k}`, 30_000);
    await sleep(1000);
    await turns(s.id, 1, () => text);
    await sleep(SETTLE_MS);
    const seen = await page.evaluate(() => window.__bench);
    await context.close();
    const rows = await api('GET', `/api/sessions/${s.id}/messages?limit=1000`);
    await api('DELETE', `/api/sessions/${s.id}`);
    const written = new Map(); // token index -> ms since the epoch
    for (const r of rows.filter((r) => r.message_type === 'stream_event')) {
      const ns = r.content.match(/"written_ns":(\d+)/)?.[1];
      const i = r.content.match(/"text":"t(\d+)"/)?.[1];
      if (ns && i) written.set(Number(i), Number(BigInt(ns) / 1000n) / 1000);
    }
    if (written.size !== DELTAS) throw new Error(`the store holds ${written.size} of the ${DELTAS} delta lines`);
    const lat = [...written].filter(([i]) => seen.tokens[i] !== undefined).map(([i, at]) => seen.tokens[i] - at);
    // Trailing: no later delta was shown either (the whole message replaced the bubble in the
    // frame they would have shown in); in the middle: a later one was.
    const lost = [...written.keys()].filter((i) => seen.tokens[i] === undefined);
    const lastSeen = Math.max(-1, ...Object.keys(seen.tokens).map(Number));
    return {
      tokensSeen: lat.length,
      lostInTheMiddle: lastSeen < 0 ? null : lost.filter((i) => i < lastSeen).length,
      lostTrailing: lastSeen < 0 ? null : lost.filter((i) => i > lastSeen).length,
      finalMessageMs: seen.marker === null ? null : seen.marker - written.get(DELTAS - 1),
      lat,
    };
  }

  // --- the figures --------------------------------------------------------------------------
  const { old: o, new: n } = results;
  const kib = (b) => b / 1024;
  // The old page shows no delta: its only figure is the whole message against the last line.
  const oldText = o.latency.deltaMs ?? o.latency.finalMessageMs ?? {};
  const rows = [
    { figure: 'dashboard open: requests', old: o.dashboard.open.requests, new: n.dashboard.open.requests },
    { figure: 'dashboard open: KiB', old: kib(o.dashboard.open.bytes), new: kib(n.dashboard.open.bytes) },
    { figure: '  of which API requests', old: o.dashboard.open.apiRequests, new: n.dashboard.open.apiRequests },
    { figure: '  of which API KiB', old: kib(o.dashboard.open.apiBytes), new: kib(n.dashboard.open.apiBytes) },
    { figure: 'dashboard, a turn elsewhere: requests', old: o.dashboard.turn.requests, new: n.dashboard.turn.requests },
    { figure: 'dashboard, a turn elsewhere: KiB', old: kib(o.dashboard.turn.bytes), new: kib(n.dashboard.turn.bytes) },
    { figure: `session page open (${lines} lines): requests`, old: o.session.open.requests, new: n.session.open.requests },
    { figure: `session page open (${lines} lines): KiB`, old: kib(o.session.open.bytes), new: kib(n.session.open.bytes) },
    { figure: '  of which API requests', old: o.session.open.apiRequests, new: n.session.open.apiRequests },
    { figure: '  of which API KiB', old: kib(o.session.open.apiBytes), new: kib(n.session.open.apiBytes) },
    { figure: 'session page, a turn in it: requests', old: o.session.turn.requests, new: n.session.turn.requests },
    { figure: 'session page, a turn in it: KiB', old: kib(o.session.turn.bytes), new: kib(n.session.turn.bytes) },
    { figure: 'written -> on screen p50 ms (old*)', old: oldText.p50, new: n.latency.deltaMs?.p50 },
    { figure: 'written -> on screen p99 ms (old*)', old: oldText.p99, new: n.latency.deltaMs?.p99 },
    { figure: 'written -> on screen max ms (old*)', old: oldText.max, new: n.latency.deltaMs?.max },
    { figure: `deltas seen on screen (of ${n.latency.deltas})`, old: o.latency.tokensSeen, new: n.latency.tokensSeen },
    { figure: '  never seen, a later one seen', old: o.latency.lostInTheMiddle, new: n.latency.lostInTheMiddle },
    { figure: '  never seen, the last ones (**)', old: o.latency.lostTrailing, new: n.latency.lostTrailing },
    { figure: 'last line written -> whole message p50 ms', old: o.latency.finalMessageMs?.p50, new: n.latency.finalMessageMs?.p50 },
    { figure: 'last line written -> whole message max ms', old: o.latency.finalMessageMs?.max, new: n.latency.finalMessageMs?.max },
  ];
  console.log('');
  printTable(rows);
  console.log(
    `\n(*) new: each delta (${LATENCY_TURNS} turns of ${DELTAS}) from its line's write to its first appearance on screen;` +
      ` old: it shows no delta, the figure is the whole message after the LAST line was written (${LATENCY_TURNS} turns).` +
      '\n(**) the last deltas of a turn, still waiting for the next frame when the whole message came and replaced' +
      " the bubble (the fake CLI's message is `echo: ...`, not the deltas' text; a real CLI's repeats it)." +
      '\nBytes: received per request (headers and body), the event stream excepted; each page in a fresh context.',
  );
  if (errors.length > 0) console.log(`\npage errors (${errors.length}):\n${errors.slice(0, 20).join('\n')}`);
  mkdirSync(dirname(OUT), { recursive: true });
  const report = {
    measured_at: new Date().toISOString(),
    baseline: BASELINE,
    cpus: cpus().length,
    sizes: { projects: PROJECTS, turns: TURNS, lines, deltas: DELTAS, latency_turns: LATENCY_TURNS, rate_model: RATE_MODEL, settle_ms: SETTLE_MS },
    results,
    table: rows.map((r) => ({ ...r, ratio: typeof r.old === 'number' && r.old !== 0 && typeof r.new === 'number' ? r.new / r.old : null })),
    page_errors: errors,
  };
  writeFileSync(OUT, JSON.stringify(report, null, 2) + '\n');
  log(`wrote ${OUT}`);
};

/** p50, p99 and max of sorted numbers. */
const stats = (sorted) => ({ p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted.at(-1) });

/**
 * In the page, before any of its scripts: the first time each `t{i}` token is seen in an
 * assistant entry (the new page's pending bubble is one), and when `marker` first shows.
 */
function observeTokens(marker) {
  const state = { tokens: {}, marker: null };
  window.__bench = state;
  const scan = () => {
    const now = performance.timeOrigin + performance.now();
    for (const el of document.querySelectorAll('.entry-assistant')) {
      const text = el.textContent ?? '';
      if (state.marker === null && text.includes(marker)) state.marker = now;
      for (const m of text.matchAll(/t(\d+)/g)) state.tokens[m[1]] ??= now;
    }
  };
  new MutationObserver(scan).observe(document, { childList: true, subtree: true, characterData: true });
}

try {
  await main();
} catch (e) {
  console.error(`bench: FAILED: ${e instanceof Error ? e.stack : e}`);
  if (errors.length > 0) console.error(`page errors:\n${errors.join('\n')}`);
  process.exitCode = 1;
} finally {
  await cleanup.run();
}
