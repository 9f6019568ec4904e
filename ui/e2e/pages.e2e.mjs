// The automation and review pages end to end, in real headless Chromium against a running
// Conduit whose CLI is the fake one (examples/fake_cli.rs: every turn answers `echo: <prompt>`
// and a result). Started by tests/api/dashboard_pages.rs, which checks the outcome afterwards.
//
// Environment: CONDUIT_URL (the service), SCREENSHOT_DIR (where screenshots go), CHROMIUM_PATH
// (default /usr/bin/chromium), E2E_REPO_FOLDER (a folder under the service's project root that
// is a git repository with a commit), E2E_REQUIRE_DARK=1 (fail when the dark screenshots are
// not dark; otherwise it is only said on stdout).
// Steps: a scheduled agent made with the form and run now, its live output; a global rule
// added, edited and deleted; a worktree session's review page: a terminal writes a file, the
// diff shows it, the UI commits it; every page on a phone without horizontal scrolling; dark
// screenshots; no page errors. Exits non-zero, naming the step, at the first thing that does
// not happen (with failure.png).
import { chromium } from 'playwright-core';
import { apiClient, env, expectText, launchOptions, steps, until, watch } from './lib.mjs';

const base = env('CONDUIT_URL');
const repoFolder = env('E2E_REPO_FOLDER');
const requireDark = process.env.E2E_REQUIRE_DARK === '1';
const api = apiClient(base);
const stamp = Date.now().toString(36);
const projectName = `E2E worktree ${stamp}`;
const agentName = `E2E agent ${stamp}`;
const agentPrompt = `say the e2e word ${stamp}`;
const rulePattern = `e2e-${stamp}/**`;
const editedPattern = `e2e-${stamp}-edited/**`;
const COMMIT_MESSAGE = 'e2e: the note written in the terminal';

const run = steps(env('SCREENSHOT_DIR'));
const browser = await chromium.launch(launchOptions());
const desktop = await browser.newContext({ viewport: { width: 1440, height: 900 } });
const page = watch(await desktop.newPage(), run.errors);
run.page = page;

/** Opens `path` and waits for `ready` (a selector), the live stream, and the page's loading notes to go. */
const visit = async (p, path, ready) => {
  await p.goto(base + path);
  await p.locator(ready).first().waitFor();
  await expectText(p.getByTestId('connection'), 'Live');
  await p.locator('.loading').first().waitFor({ state: 'detached', timeout: 10_000 }).catch(() => {});
};

/**
 * How much wider than the window the document is (0 or less: no horizontal scroll), and the
 * outermost elements that stick out. A phone browser zooms out to show a page wider than the
 * device, and `innerWidth` grows with it: the window is also held to the device's width.
 */
const overflowOf = (p) =>
  p.evaluate((device) => {
    const { scrollWidth, clientWidth } = document.documentElement;
    const width = Math.min(window.innerWidth, device);
    const out = (el) => el instanceof Element && el.getBoundingClientRect().right > width + 0.5;
    const clipped = (el) => {
      for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
        if (getComputedStyle(a).overflowX !== 'visible') return true;
      }
      return false;
    };
    const culprits = [...document.querySelectorAll('body *')]
      .filter((el) => out(el) && !out(el.parentElement) && el.getBoundingClientRect().width > 0 && !clipped(el))
      .slice(0, 4)
      .map((el) => {
        const id = el.getAttribute('data-testid');
        const right = Math.round(el.getBoundingClientRect().right);
        return `${el.tagName.toLowerCase()}${el.classList.length ? `.${[...el.classList].join('.')}` : ''}${id ? `[${id}]` : ''} to ${right} px`;
      });
    return { over: scrollWidth - width, facts: `scrollWidth ${scrollWidth}, innerWidth ${window.innerWidth}, clientWidth ${clientWidth}`, culprits };
  }, p.viewportSize().width);

/** The computed background of body (of html when body's is transparent), and whether it is dark. */
const background = (p) =>
  p.evaluate(() => {
    const parse = (c) => (c.match(/[\d.]+/g) ?? []).map(Number);
    const seen = [];
    for (const el of [document.body, document.documentElement]) {
      const colour = getComputedStyle(el).backgroundColor;
      const [r, g, b, a = 1] = parse(colour);
      seen.push(`${el.tagName.toLowerCase()} ${colour}`);
      if (a === 0) continue;
      const lin = (v) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
      const luminance = 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
      return { seen: seen.join(', '), dark: luminance < 0.2 };
    }
    return { seen: `${seen.join(', ')} (transparent: the canvas)`, dark: false };
  });

let session;
await run.main(
  async () => {
    run.step('create a worktree project through the API');
    const project = await api('POST', '/api/projects', { name: projectName, folder_path: repoFolder, workspace_mode: 'worktree' });
    if (project.workspace_mode !== 'worktree') throw new Error(`the project is not in worktree mode: ${JSON.stringify(project)}`);

    run.step('create a scheduled agent with the form on the Scheduled agents page');
    await visit(page, '/agents', '[data-testid=agents-page]');
    await page.getByTestId('agent-new').click();
    const form = page.getByRole('dialog', { name: 'New scheduled agent' });
    await form.locator('[name=name]').fill(agentName);
    await form.locator('[name=objective]').fill(agentPrompt);
    await form.locator('[name=schedule]').fill('0 0 1 1 *'); // once a year: only "Run now" runs it here
    await form.locator('[name=project_id]').selectOption({ label: projectName });
    await run.shot('agent-form');
    await form.getByTestId('agent-save').click();
    await page.waitForURL(/\/agents\/[^/?]+$/);
    await expectText(page.locator('h1'), agentName);
    await expectText(page.getByTestId('agent-objective'), agentPrompt);

    run.step('the agent is listed; "Run now" opens its run');
    await page.locator('.crumbs').getByRole('link', { name: 'Scheduled agents' }).click();
    const row = page.getByTestId('agent-row').filter({ hasText: agentName });
    await expectText(row, projectName);
    await row.getByTestId('agent-trigger').click();
    await page.waitForURL(/\/agents\/[^/?]+\?run=/);

    run.step("the run's live output shows its lines and its finished status");
    const output = page.getByTestId('execution-output');
    await expectText(output.getByTestId('execution-lines').locator('.run-text'), `echo: ${agentPrompt}`, 60_000);
    await expectText(output.getByTestId('execution-lines').locator('.result'), 'Turn');
    await page.locator('[data-testid=execution-output][data-status=success]').waitFor({ timeout: 60_000 });
    await expectText(output.locator('.badge'), 'success');
    await expectText(output.getByTestId('execution-result'), `echo: ${agentPrompt}`);
    await page.locator('[data-testid=execution-row][data-status=success]').first().waitFor();
    await run.shot('agent-run');

    run.step('add a global allow rule on the Rules page');
    await visit(page, '/rules', '[data-testid=rules-page]');
    const add = page.getByRole('form', { name: 'Add rule' });
    await add.getByLabel('Scope').selectOption('global');
    await add.getByLabel('Behavior').selectOption('allow');
    await add.getByLabel('Tool').fill('Read');
    await add.getByLabel('Pattern').fill(rulePattern);
    await add.getByRole('button', { name: 'Add rule' }).click();
    const ruleRow = (pattern) => page.getByTestId('rule-row').filter({ hasText: pattern });
    await ruleRow(rulePattern).waitFor();
    for (const text of ['global', 'allow', 'Read']) await expectText(ruleRow(rulePattern), text);
    await run.shot('rules-added');

    run.step('edit the rule: change its pattern');
    await ruleRow(rulePattern).getByRole('button', { name: 'Edit' }).click();
    const edit = page.getByRole('form', { name: 'Save' });
    await edit.getByLabel('Pattern').fill(editedPattern);
    await edit.getByRole('button', { name: 'Save' }).click();
    await ruleRow(editedPattern).waitFor();
    await ruleRow(rulePattern).waitFor({ state: 'detached' });
    for (const text of ['global', 'allow', 'Read']) await expectText(ruleRow(editedPattern), text);
    await run.shot('rules-edited');

    run.step('delete the rule');
    await ruleRow(editedPattern).getByRole('button', { name: 'Delete' }).click();
    await ruleRow(editedPattern).waitFor({ state: 'detached' });
    await run.shot('rules-deleted');
    await page.reload();
    await page.getByTestId('rules-page').waitFor();
    await page.locator('.loading').first().waitFor({ state: 'detached' });
    if ((await ruleRow(editedPattern).count()) > 0) throw new Error('the deleted rule is back after a reload');

    run.step('launch a session in the worktree project through the API');
    const launched = await api('POST', `/api/projects/${project.id}/sessions`, {});
    session = await until(
      'the session never became idle',
      async () => {
        const s = await api('GET', `/api/sessions/${launched.id}`);
        if (s.status === 'error' || s.status === 'closed') throw new Error(`the session ended: ${JSON.stringify(s)}`);
        return s.status === 'idle' && s;
      },
      60_000,
    );
    if (!session.branch || !session.worktree_path) throw new Error(`the session has no worktree: ${JSON.stringify(session)}`);

    run.step('open a terminal on the review page and write a file in it');
    await visit(page, `/sessions/${session.id}/review`, '[data-testid=review-page]');
    await expectText(page.getByTestId('diff-summary'), '0 files changed');
    await page.getByRole('button', { name: 'New terminal' }).click();
    const terminal = page.locator('[data-testid=terminal][data-link=open]');
    await terminal.waitFor();
    await terminal.click();
    await page.keyboard.type('echo hello-e2e > e2e-note.txt');
    await page.keyboard.press('Enter');
    await expectText(page.getByTestId('terminal').locator('.xterm-rows'), 'echo hello-e2e');
    await page.waitForTimeout(500);

    run.step('refresh the diff: the new file and its line are in it');
    const noteFile = page.getByTestId('diff-file').filter({ hasText: 'e2e-note.txt' });
    await until('e2e-note.txt never showed in the diff', async () => {
      const refresh = page.getByRole('button', { name: 'Refresh' });
      if (await refresh.isEnabled().catch(() => false)) await refresh.click();
      await page.waitForTimeout(500);
      return (await noteFile.count()) > 0;
    });
    await expectText(noteFile.locator('.diff-code'), 'hello-e2e');
    await expectText(page.getByTestId('diff-summary'), '1 file changed');
    await run.shot('review-diff');

    run.step('commit it with a message');
    await page.getByLabel('Commit message').fill(COMMIT_MESSAGE);
    await page.getByRole('button', { name: 'Commit all changes' }).click();
    await expectText(page.locator('.ok-note'), `on ${session.branch}`);
    await run.shot('review-committed');

    run.step('a session of over 1,000 lines opens in a bounded number of requests');
    // The fake CLI answers each turn with 3 lines; with the user line, 4 per turn.
    const TURNS = 270;
    for (let sent = 0; sent < TURNS; ) {
      const batch = Math.min(90, TURNS - sent); // under the 100 turns a session queues
      for (let i = 0; i < batch; i++) await api('POST', `/api/sessions/${session.id}/message`, { content: `long-${sent + i}` });
      sent += batch;
      await until(`${sent} turns done`, async () => {
        const s = await api('GET', `/api/sessions/${session.id}`);
        return s.num_turns >= sent && s.status === 'idle';
      }, 120_000);
    }
    // Leave the review page first: its own reads still due (a usage refresh the last turns'
    // frames scheduled) must not be counted as the long session's.
    await page.goto('about:blank');
    const asked = [];
    const count = (r) => {
      const url = new URL(r.url());
      if (url.pathname.startsWith('/api/') && url.pathname !== '/api/events/stream') asked.push(url.pathname + url.search);
    };
    page.on('request', count);
    await visit(page, `/sessions/${session.id}`, '[data-testid=transcript]');
    await expectText(page.getByTestId('transcript'), `long-${TURNS - 1}`);
    await page.waitForTimeout(1000);
    console.log(`e2e: requests to open a ${TURNS * 4}-line session: ${asked.length} ${JSON.stringify(asked)}`);
    if (asked.length > 10) throw new Error(`opening the long session took ${asked.length} requests: ${asked.join(', ')}`);
    run.step('scrolling up reads the page before, and only it');
    const before = asked.length;
    await page.getByTestId('transcript').hover();
    await until('an older page was read', async () => {
      await page.mouse.wheel(0, -20_000);
      return asked.slice(before).some((u) => u.includes('before='));
    });
    await run.shot('long-session-scrolled');
    page.off('request', count);

    run.step('on a phone: no page scrolls sideways');
    const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 });
    const mobile = watch(await phone.newPage(), run.errors, 'phone');
    run.page = mobile;
    const overflowing = [];
    for (const [name, path, ready] of [
      ['dashboard', '/', '[data-testid=stat-tiles]'],
      ['agents', '/agents', '[data-testid=agent-list]'],
      ['rules', '/rules', '[data-testid=rules-page]'],
      ['processes', '/processes', '[data-testid=processes-page]'],
      ['webhooks', '/webhooks', '[data-testid=webhooks-page]'],
      ['permissions', '/permissions', '[data-testid=permissions-page]'],
      ['session', `/sessions/${session.id}`, '[data-testid=transcript]'],
      ['review', `/sessions/${session.id}/review`, '[data-testid=diff-file]'],
    ]) {
      await visit(mobile, path, ready);
      await mobile.waitForTimeout(300);
      const m = await overflowOf(mobile);
      const culprits = m.culprits.length ? `; sticking out: ${m.culprits.join(', ')}` : '';
      console.log(`e2e: phone ${name}: ${m.over > 0 ? `${m.over} px too wide` : 'fits'} (${m.facts}${culprits})`);
      if (m.over > 0) overflowing.push(`${name} (${path}) by ${m.over} px${culprits}`);
      await run.shot(`phone-${name}`, mobile);
    }
    if (overflowing.length > 0) throw new Error(`pages scroll sideways at 390 px: ${overflowing.join('; ')}`);
    run.page = page;

    run.step('dark mode screenshots');
    await page.emulateMedia({ colorScheme: 'dark' });
    const light = [];
    for (const [name, path, ready] of [
      ['dashboard', '/', '[data-testid=stat-tiles]'],
      ['agents', '/agents', '[data-testid=agent-list]'],
      ['review', `/sessions/${session.id}/review`, '[data-testid=diff-file]'],
    ]) {
      await visit(page, path, ready);
      const bg = await background(page);
      console.log(`e2e: dark ${name}: ${bg.dark ? 'dark' : 'NOT dark'} (${bg.seen})`);
      if (!bg.dark) light.push(name);
      await run.shot(`dark-${name}`);
    }
    if (light.length > 0 && requireDark) throw new Error(`not dark with a dark colour scheme: ${light.join(', ')}`);

    run.step('no page reported an error');
  },
  () => browser.close(),
);
