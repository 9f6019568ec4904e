// The dashboard end to end, in real headless Chromium against a running Conduit (the real
// binary, the real Claude Code CLI, the fake Messages API). Started by tests/api/dashboard.rs,
// which prepares the service and the fake model's replies and checks the outcome afterwards.
//
// Environment: CONDUIT_URL (the service), SCREENSHOT_DIR (where page screenshots go),
// E2E_PROMPT / E2E_REPLY (a first message and the fake model's recognisable answer),
// E2E_DENY_PROMPT / E2E_DENIED_COMMAND (a message on which the model runs a Bash command that
// the deny rule this script adds must stop), E2E_IMPORT_FOLDER (a folder to import).
// Exits non-zero, naming the step, at the first thing that does not happen.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { env, expectText, launchOptions, steps, watch } from './lib.mjs';

const base = env('CONDUIT_URL');
const prompt = env('E2E_PROMPT');
const reply = env('E2E_REPLY');
const denyPrompt = env('E2E_DENY_PROMPT');
const deniedCommand = env('E2E_DENIED_COMMAND');
const importFolder = env('E2E_IMPORT_FOLDER');
const TURN = 90_000; // a real CLI turn, generous for a loaded CI machine

const run = steps(env('SCREENSHOT_DIR'));
const profile = mkdtempSync(join(tmpdir(), 'conduit-e2e-chromium-'));
const context = await chromium.launchPersistentContext(profile, { ...launchOptions(), viewport: { width: 1400, height: 900 } });
const page = watch(await context.newPage(), run.errors); // dialogs accepted: the kill confirmation
run.page = page;
const { step, shot } = run;
const transcript = () => page.getByTestId('transcript');

await run.main(async () => {
  step('the dashboard loads and its live stream connects');
  await page.goto(base + '/');
  await expectText(page.getByTestId('connection'), 'Live');
  await expectText(page.getByTestId('live-sessions'), 'No session is running.');
  await shot('01-dashboard-empty');

  step('import a folder through the folder browser');
  await page.getByRole('button', { name: 'Import folder' }).click();
  const dialog = page.getByRole('dialog', { name: 'Import a folder' });
  await dialog.locator('.folder', { hasText: importFolder }).waitFor();
  await expectText(dialog.locator('.found'), importFolder);
  await shot('02-import-dialog');
  await dialog.locator('.found', { hasText: importFolder }).getByRole('button', { name: 'Import' }).click();
  await page.locator('h1', { hasText: importFolder }).waitFor();
  await expectText(page.getByTestId('project-list'), importFolder);

  step('create a project through the UI');
  await page.getByRole('button', { name: 'New project' }).click();
  const create = page.getByRole('dialog', { name: 'New project' });
  await create.getByLabel('Name').fill('E2E app');
  await create.getByLabel('Folder').fill('e2e-app');
  await create.getByRole('button', { name: 'Create project' }).click();
  await page.locator('h1', { hasText: 'E2E app' }).waitFor();
  await expectText(page.getByTestId('project-list'), 'E2E app');
  await expectText(page.getByTestId('project-sessions'), 'No sessions yet.');

  step('start a session with a first message');
  await page.getByRole('button', { name: 'New session' }).click();
  const launch = page.getByRole('dialog', { name: /New session/ });
  await launch.getByLabel('First message (optional)').fill(prompt);
  await launch.getByRole('button', { name: 'Start session' }).click();
  await page.waitForURL(/\/sessions\//);
  const sessionUrl = page.url();

  step("see the assistant's reply and the cost appear live");
  await expectText(transcript().locator('.entry-user'), prompt, TURN);
  await expectText(transcript().locator('.entry-assistant'), reply, TURN);
  await expectText(transcript().locator('.entry-result'), 'Turn finished', TURN);
  await page.waitForFunction(
    () => {
      const cost = document.querySelector('[data-testid=session-totals] .total-value')?.textContent ?? '$0.00';
      return cost !== '$0.00';
    },
    null,
    { timeout: TURN },
  );
  await shot('03-session-first-reply');

  step('a client-side route loads directly (the server falls back to the app)');
  await page.goto(sessionUrl);
  await expectText(transcript().locator('.entry-assistant'), reply);

  step('add a global deny rule on the dashboard');
  await page.getByRole('link', { name: 'Dashboard' }).click();
  const rules = page.getByTestId('global-rules');
  await rules.getByLabel('Tool').fill('Bash');
  await rules.getByLabel('Pattern').fill('rm:*');
  await rules.getByRole('button', { name: 'Add rule' }).click();
  await expectText(rules.locator('tbody tr'), 'rm:*');
  await expectText(page.getByTestId('live-sessions'), 'idle');

  step('send a message from the session page; the model tries the denied command');
  await page.getByTestId('live-sessions').getByRole('link').first().click();
  await page.getByLabel('Message').fill(denyPrompt);
  await page.getByRole('button', { name: 'Send' }).click();
  await expectText(transcript().locator('.entry-user'), denyPrompt);
  await expectText(page.getByTestId('denial'), 'Denied', TURN);
  await expectText(page.locator('.tool summary'), deniedCommand);
  await page.locator('.entry-result').nth(1).waitFor({ timeout: TURN });
  await shot('04-session-denied');

  step('the denial is on the dashboard, highlighted, with the figures');
  await page.getByRole('link', { name: 'Dashboard' }).click();
  await expectText(page.getByTestId('decisions').locator('.decision-denied'), deniedCommand);
  await expectText(page.getByTestId('live-sessions'), 'E2E app');
  const liveTile = await page.locator('.tile', { hasText: 'Live sessions' }).locator('.tile-value').textContent();
  if (liveTile?.trim() !== '1') throw new Error(`the live sessions tile shows ${liveTile}, not 1`);
  const costTile = await page.getByTestId('tile-cost').locator('.tile-value').textContent();
  if (!costTile || costTile.trim() === '$0.00') throw new Error(`the cost tile shows ${costTile}`);
  await shot('05-dashboard-live');

  step('the project page lists the session');
  await page.getByTestId('project-list').getByRole('link', { name: 'E2E app' }).click();
  await expectText(page.getByTestId('project-sessions').locator('tbody tr'), 'idle');
  await shot('06-project');

  step('switch the permission mode from the session page');
  await page.getByTestId('project-sessions').getByRole('link').first().click();
  await page.getByLabel('Permission mode').selectOption('plan');
  const modeDeadline = Date.now() + 15_000;
  while ((await page.getByLabel('Permission mode').inputValue()) !== 'plan') {
    if (Date.now() > modeDeadline) throw new Error('the session never showed the plan mode');
    await page.waitForTimeout(500);
    await page.reload();
  }

  step('kill the session');
  await page.getByRole('button', { name: 'Kill session' }).click();
  await expectText(page.locator('h1 .badge'), 'closed', 30_000);
  await expectText(page.locator('.ended-note'), 'has ended');
  await shot('07-session-closed');

  step('the dashboard shows no live session any more');
  await page.getByRole('link', { name: 'Dashboard' }).click();
  await expectText(page.getByTestId('live-sessions'), 'No session is running.');
}, async () => {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
});
