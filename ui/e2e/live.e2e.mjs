// The dashboard's live behaviour end to end, in real headless Chromium against the real binary,
// the real Claude Code CLI and the fake Messages API: a reply shows while it is written, a turn
// in another session costs an open page a handful of requests at most, an ended session is
// resumed from its page, and after a service restart the open page shows the session still there
// (its CLI kept by its keeper), live again, and its next turn, without being reloaded. Started by tests/api/dashboard_live.rs.
//
// Environment: CONDUIT_URL, SCREENSHOT_DIR, E2E_SLOW_PROMPT / E2E_SLOW_FIRST / E2E_SLOW_LAST
// (a message the fake model answers slowly, the first and last words of that answer),
// E2E_OTHER_PROMPT (a message for another session), E2E_RESTART_FILE (this script prints
// `e2e: restart-now`, the test restarts the service on the same address and creates this file).
import { existsSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { apiClient, env, expectText, launchOptions, steps, until, watch } from './lib.mjs';

const base = env('CONDUIT_URL');
const run = steps(env('SCREENSHOT_DIR'));
const slowPrompt = env('E2E_SLOW_PROMPT');
const slowFirst = env('E2E_SLOW_FIRST');
const slowLast = env('E2E_SLOW_LAST');
const otherPrompt = env('E2E_OTHER_PROMPT');
const restartFile = env('E2E_RESTART_FILE');
const TURN = 90_000; // a real CLI turn, generous for a loaded CI machine
/** What a turn in another session may cost an open page (the "a handful"). */
const MAX_REQUESTS_PER_OTHER_TURN = 5;
const api = apiClient(base);

const browser = await chromium.launch(launchOptions());
const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
const page = watch(await context.newPage(), run.errors);
run.page = page;

// Every API request the page makes, but its one long-lived event stream.
let requests = [];
page.on('request', (r) => {
  const url = new URL(r.url());
  if (url.pathname.startsWith('/api/') && url.pathname !== '/api/events/stream') requests.push(url.pathname + url.search);
});

const session = (id) => api('GET', `/api/sessions/${id}`);
const idle = (id, turns) =>
  until(`session ${id} idle after ${turns} turn(s)`, async () => {
    const s = await session(id);
    return s.status === 'idle' && s.num_turns >= turns ? s : null;
  }, TURN);
const launch = async (project) => {
  const s = await api('POST', `/api/projects/${project}/sessions`, {});
  await idle(s.id, 0);
  return s.id;
};
const badge = () => page.locator('h1 .badge');
/** Sends `content` to session `id` through the API, waits for its turn, then for the page to settle. */
const turnElsewhere = async (id, content, turns) => {
  await page.waitForTimeout(1500);
  requests = [];
  await api('POST', `/api/sessions/${id}/message`, { content });
  await idle(id, turns);
  await page.waitForTimeout(1500);
  return [...requests];
};

await run.main(
  async () => {
    run.step('set up a project with two live sessions');
    const project = (await api('POST', '/api/projects', { name: 'Live e2e', folder_path: 'live-e2e' })).id;
    const a = await launch(project);
    const b = await launch(project);

    run.step('a reply shows while the model is still writing it');
    await page.goto(`${base}/sessions/${a}`);
    await expectText(page.getByTestId('connection'), 'Live');
    await expectText(badge(), 'idle');
    await page.getByLabel('Message').fill(slowPrompt);
    await page.getByRole('button', { name: 'Send' }).click();
    await expectText(page.locator('.entry-pending'), slowFirst, TURN);
    const early = await page.locator('.entry-pending').first().textContent();
    const resultsWhilePending = await page.locator('.entry-result').count();
    if (resultsWhilePending !== 0) throw new Error(`the turn had already finished when its text first showed`);
    if (early?.includes(slowLast)) throw new Error(`the whole reply arrived at once: ${early}`);
    await run.shot('live-01-streaming');
    await expectText(page.locator('.entry-assistant'), slowLast, TURN);
    await expectText(page.locator('.entry-result'), 'Turn finished', TURN);
    if ((await page.locator('.entry-pending').count()) !== 0) throw new Error('the streamed bubble stayed after the message');
    await run.shot('live-02-streamed');

    run.step('a turn in another session costs the session page a handful of requests');
    const onSession = await turnElsewhere(b, otherPrompt, 1);
    console.log(`e2e: requests on the session page for another session's turn: ${onSession.length} ${JSON.stringify(onSession)}`);
    if (onSession.length > MAX_REQUESTS_PER_OTHER_TURN) throw new Error(`${onSession.length} requests: ${onSession.join(', ')}`);

    run.step('and the dashboard too');
    await page.goto(`${base}/`);
    await expectText(page.getByTestId('live-sessions'), 'Live e2e');
    const onDashboard = await turnElsewhere(b, `${otherPrompt} again`, 2);
    console.log(`e2e: requests on the dashboard for another session's turn: ${onDashboard.length} ${JSON.stringify(onDashboard)}`);
    if (onDashboard.length > MAX_REQUESTS_PER_OTHER_TURN) throw new Error(`${onDashboard.length} requests: ${onDashboard.join(', ')}`);

    run.step('an ended session is resumed from its page');
    await page.goto(`${base}/sessions/${a}`);
    await expectText(badge(), 'idle');
    await page.getByRole('button', { name: 'Kill session' }).click();
    await expectText(badge(), 'closed', 30_000);
    await page.getByRole('button', { name: 'Resume' }).click();
    await expectText(badge(), 'idle', TURN);
    await expectText(page.locator('.entry-assistant'), slowLast);
    await run.shot('live-03-resumed');

    run.step('after a restart the open page shows the session still there, live, without a reload');
    const url = page.url();
    const before = await session(a);
    console.log('e2e: restart-now');
    await until('the test restarted the service', () => existsSync(restartFile), 120_000);
    await expectText(page.getByTestId('connection'), 'Live', 60_000);
    await expectText(badge(), 'idle', 60_000);
    const after = await session(a);
    if (after.cli_pid !== before.cli_pid) throw new Error(`the session came back with another CLI: ${before.cli_pid}, then ${after.cli_pid}`);
    if (page.url() !== url) throw new Error(`the page moved to ${page.url()}`);
    const results = await page.locator('.entry-result').count();
    await page.getByLabel('Message').fill('one more after the restart');
    await page.getByRole('button', { name: 'Send' }).click();
    await until('the turn after the restart shows', async () => (await page.locator('.entry-result').count()) > results, TURN);
    await run.shot('live-04-after-restart');

    // The browser reports the refused connections of the restart as console errors: expected.
    run.errors = run.errors.filter((e) => !/net::ERR_|Failed to load resource/.test(e));
  },
  async () => {
    await browser.close();
  },
);
