// What the end-to-end scripts share: Chromium's launch, a run of named steps with screenshots,
// the page errors they collect, and small waits. Each script exits non-zero naming the step
// at the first thing that does not happen, after saving `failure.png`.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

/** A required environment variable. */
export const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};

/** Headless Chromium as the tests run it (`CHROMIUM_PATH`, default /usr/bin/chromium). */
export const launchOptions = () => ({
  headless: true,
  executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
  // Without the background-networking flags Chromium keeps calling home, and there may be no network.
  args: [
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
  ],
});

/** Collects a page's uncaught errors and console errors into `errors`; accepts dialogs (confirmations). */
export const watch = (page, errors, label = '') => {
  const tag = label ? `${label}: ` : '';
  page.on('pageerror', (e) => errors.push(`${tag}${String(e)}`));
  page.on('console', (m) => m.type() === 'error' && errors.push(`${tag}console: ${m.text()}`));
  page.on('dialog', (d) => d.accept());
  return page;
};

/**
 * Named steps and screenshots. `run.page` is the page `shot` and the failure screenshot take
 * (switch it when a step moves to another page).
 */
export const steps = (shots) => {
  mkdirSync(shots, { recursive: true });
  const run = {
    page: null,
    name: 'start',
    errors: [],
    step(name) {
      run.name = name;
      console.log(`e2e: ${name}`);
    },
    shot: (name, page = run.page) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: true }),
    /** Runs `body`; on a throw, says where, saves failure.png and sets a failing exit code. */
    async main(body, cleanup) {
      try {
        await body();
        if (run.errors.length > 0) throw new Error(`the page reported errors:\n${run.errors.join('\n')}`);
        console.log('e2e: all steps passed');
      } catch (e) {
        console.error(`e2e: FAILED at "${run.name}": ${e instanceof Error ? e.message : e}`);
        if (run.errors.length > 0) console.error(`page errors:\n${run.errors.join('\n')}`);
        if (run.page) await run.shot('failure').catch(() => {});
        process.exitCode = 1;
      } finally {
        await cleanup();
      }
    },
  };
  return run;
};

/** Waits for the first of `locator`'s matches holding `text`. */
export const expectText = (locator, text, timeout = 15_000) => locator.filter({ hasText: text }).first().waitFor({ timeout });

/** Polls `check` (async, truthy when done) until it holds; throws `what` with the last value after `timeout`. */
export const until = async (what, check, timeout = 15_000, every = 250) => {
  const deadline = Date.now() + timeout;
  let last;
  for (;;) {
    last = await check();
    if (last) return last;
    if (Date.now() > deadline) throw new Error(`${what} (waited ${timeout / 1000} s)`);
    await new Promise((r) => setTimeout(r, every));
  }
};

/** JSON calls to the service for a script's setup; a status other than 2xx throws with the answer. */
export const apiClient = (base) => async (method, path, body) => {
  const res = await fetch(base + path, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path} answered ${res.status}: ${text}`);
  return text ? JSON.parse(text) : null;
};
