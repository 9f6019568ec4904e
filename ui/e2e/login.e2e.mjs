// The dashboard's login end to end, in real headless Chromium against a running Conduit that
// has a user (so every /api route wants a credential). Started by tests/api/dashboard_login.rs,
// which checks the outcome afterwards.
//
// Environment: CONDUIT_URL (the service), SCREENSHOT_DIR, CHROMIUM_PATH (default
// /usr/bin/chromium), E2E_USER and E2E_PASSWORD (the user's name and password).
// Steps: the dashboard opens on the login page; a wrong password is refused on the page; the
// right one shows the app, live; the sign-in cookie is HttpOnly and SameSite=Strict (read from
// the browser context, and unseen by the page's script); the sign-in sessions page lists one
// sign-in, this browser's; signing out shows the login page; a reload stays there, also with
// the old cookie put back (the service revoked it). Ends with `e2e: login flow passed`.
import { chromium } from 'playwright-core';
import { env, expectText, launchOptions, steps, until } from './lib.mjs';

const base = env('CONDUIT_URL');
const user = env('E2E_USER');
const password = env('E2E_PASSWORD');
const COOKIE = 'conduit_session';

const run = steps(env('SCREENSHOT_DIR'));
const browser = await chromium.launch(launchOptions());
const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
const page = await context.newPage();
run.page = page;

// As lib.mjs's `watch`, but a signed-out page's 401s are expected here: Chromium logs every
// refused request ("Failed to load resource: ... 401") as a console error, and `GET /api/auth/me`
// and the wrong password are refused on purpose.
const expectedRefusal = /Failed to load resource: the server responded with a status of 401/;
page.on('pageerror', (e) => run.errors.push(String(e)));
page.on('console', (m) => m.type() === 'error' && !expectedRefusal.test(m.text()) && run.errors.push(`console: ${m.text()}`));

const loginHeading = () => page.getByRole('heading', { name: 'Sign in' });
const signIn = async (name, secret) => {
  await page.getByLabel('Name').fill(name);
  await page.getByLabel('Password').fill(secret);
  await page.getByRole('button', { name: 'Sign in' }).click();
};
const sessionCookies = async () => (await context.cookies(base)).filter((c) => c.name === COOKIE);

await run.main(
  async () => {
    run.step('the dashboard opens on the login page');
    await page.goto(base + '/');
    await loginHeading().waitFor();
    if ((await page.getByTestId('stat-tiles').count()) > 0) throw new Error('the dashboard shows without signing in');
    await run.shot('01-login');

    run.step('a wrong password is refused on the page');
    await signIn(user, `${password}-wrong`);
    await expectText(page.getByTestId('login-error'), 'Wrong name or password');
    await loginHeading().waitFor();
    if ((await sessionCookies()).length > 0) throw new Error('a wrong password set a cookie');
    await run.shot('02-wrong-password');

    run.step('the right password shows the app, with the live stream signed in too');
    await signIn(user, password);
    await page.getByTestId('stat-tiles').waitFor();
    await expectText(page.getByTestId('connection'), 'Live');
    await expectText(page.getByTestId('signed-in-as'), user);
    await run.shot('03-signed-in');

    run.step('the sign-in cookie is HttpOnly and SameSite=Strict');
    const cookies = await sessionCookies();
    if (cookies.length !== 1) throw new Error(`one ${COOKIE} cookie expected: ${JSON.stringify(cookies)}`);
    const [cookie] = cookies;
    console.log(`e2e: cookie ${cookie.name}: httpOnly ${cookie.httpOnly}, sameSite ${cookie.sameSite}, path ${cookie.path}`);
    if (cookie.httpOnly !== true) throw new Error(`the cookie is not HttpOnly: ${JSON.stringify({ ...cookie, value: '…' })}`);
    if (cookie.sameSite !== 'Strict') throw new Error(`the cookie is not SameSite=Strict: ${cookie.sameSite}`);
    if (cookie.path !== '/') throw new Error(`the cookie's path is ${cookie.path}, not /`);
    if ((await page.evaluate(() => document.cookie)).includes(COOKIE)) throw new Error("the page's script can read the cookie");

    run.step('the sign-in sessions page lists this browser only');
    await page.getByRole('link', { name: 'Sign-in sessions' }).click();
    await page.waitForURL(/\/sign-ins$/);
    const rows = page.getByTestId('sign-in');
    await rows.first().waitFor();
    await until('exactly one sign-in is listed', async () => (await rows.count()) === 1, 5_000);
    await expectText(rows.first(), 'this browser');
    if ((await rows.first().getAttribute('data-current')) !== 'true') throw new Error('the sign-in is not marked current');
    await run.shot('04-sign-ins');

    run.step('signing out shows the login page and removes the cookie');
    await page.getByTestId('sign-out').click();
    await loginHeading().waitFor();
    await until('the cookie is removed', async () => (await sessionCookies()).length === 0, 5_000);
    await run.shot('05-signed-out');

    run.step('a reload stays on the login page');
    await page.reload();
    await loginHeading().waitFor();
    if ((await page.getByTestId('sign-ins-page').count()) > 0) throw new Error('the sessions page shows after signing out');

    run.step('the old cookie put back no longer works: still the login page');
    await context.addCookies([cookie]);
    await page.reload();
    await loginHeading().waitFor();
    if ((await page.getByTestId('sign-ins-page').count()) > 0) throw new Error('the revoked cookie still opens the app');
    await run.shot('06-revoked-cookie');
    console.log('e2e: login flow passed');
  },
  () => browser.close(),
);
