// The console's single sign-on in Debian's headless Chromium (playwright-core), against the
// oidc-provider of tests/oidc/provider.mjs. Run by tests/console_oidc_test.sh.
// Usage: node console_oidc.mjs DAEMON_URL ISSUER ADMIN_TOKEN ARTIFACT_DIR
import { chromium } from 'playwright-core';
import path from 'node:path';

const [url, issuer, adminToken, outDir] = process.argv.slice(2);
if (!url || !issuer || !adminToken || !outDir) {
  console.error('usage: node console_oidc.mjs DAEMON_URL ISSUER ADMIN_TOKEN ARTIFACT_DIR');
  process.exit(2);
}
let step = 0;
function check(cond, what) {
  if (!cond) throw new Error(`check failed: ${what}`);
  console.log(`ok ${++step} - ${what}`);
}
async function jobsOfResearch() {
  const r = await fetch(`${url}/v1/jobs?tenant=research`, { headers: { Authorization: `Bearer ${adminToken}` } });
  return (await r.json()).items.map((j) => j.name);
}

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
// The provider's certificate is the test's own: Chromium is told to accept it (Node trusts it
// through NODE_EXTRA_CA_CERTS for the direct requests below).
const context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1280, height: 900 } });
const page = await context.newPage();
page.setDefaultTimeout(15000);
const problems = [];
page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
const shot = (name) => page.screenshot({ path: path.join(outDir, `${name}.png`), fullPage: true });

try {
  await page.goto(`${url}/`);
  const sso = page.getByRole('link', { name: `Sign in with ${new URL(issuer).host}` });
  await sso.waitFor();
  check(true, 'the sign-in page offers the identity provider');
  await shot('sso-01-sign-in');
  await sso.click();

  // The provider's own pages: its login form (any password in development mode), then consent.
  await page.locator('input[name="login"]').waitFor();
  check(page.url().startsWith(issuer), `the browser is at the provider (${new URL(page.url()).origin})`);
  await page.locator('input[name="login"]').fill('ada');
  await page.locator('input[name="password"]').fill('any');
  await page.locator('button[type="submit"]').click();
  await page.locator('button[type="submit"]', { hasText: /continue/i }).click();

  await page.locator('#whoami', { hasText: 'ada@example.com' }).waitFor();
  check(page.url().startsWith(url), 'back on the console');
  check((await page.locator('#whoami').innerText()).includes('member of research'), 'signed in as ada, member of research');
  await shot('sso-02-signed-in');

  const cookies = await context.cookies(url);
  const session = cookies.find((c) => c.name === 'gpupool_session');
  check(session && session.httpOnly, 'the session cookie is HttpOnly');
  check(session.sameSite === 'Strict' && session.path === '/', 'the session cookie is SameSite=Strict on /');
  check(!cookies.some((c) => c.name === 'gpupool_login'), 'the login cookie is gone');
  check(!(await page.evaluate(() => document.cookie)).includes(session.value), 'the page cannot read the session cookie');
  check(!(await page.evaluate(() => JSON.stringify(sessionStorage) + JSON.stringify(localStorage))).includes('eyJ'),
    'no token in the page\'s storage');

  // A write through the console's own form: the session's CSRF token goes with it.
  await page.locator('#nav a[data-view="jobs"]').click();
  await page.waitForSelector('body[data-loaded="jobs"]');
  await page.getByLabel('Name', { exact: true }).fill('sso-job');
  await page.getByLabel('GPU model').selectOption('h100-80gb');
  await page.getByLabel('Amount').fill('1');
  await page.getByLabel('Command').fill('sleep 1');
  await page.getByRole('button', { name: 'Submit' }).click();
  await page.locator('#job-list tr', { hasText: 'sso-job' }).waitFor();
  check((await jobsOfResearch()).includes('sso-job'), 'a job submitted from the console is the daemon\'s');

  // A write with the cookie but without the CSRF token (what a forged form or a script on the
  // page that did not get the token sends): 403, nothing written.
  const bare = await page.evaluate(async () => {
    const r = await fetch('/v1/jobs', {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ tenant: 'research', name: 'no-csrf', resources: { flavor: 'h100-80gb', gpus: 1 }, command: ['true'] }),
    });
    return { status: r.status, body: await r.text() };
  });
  check(bare.status === 403 && bare.body.includes('X-CSRF-Token'), `a write without the CSRF token: ${bare.status}`);
  check(!(await jobsOfResearch()).includes('no-csrf'), 'and nothing was written');

  // Another origin (the provider's) posting to the daemon with the browser's credentials: the
  // SameSite=Strict cookie does not go, so the daemon sees no one.
  const other = await context.newPage();
  await other.goto(`${issuer}/.well-known/openid-configuration`);
  await other.evaluate(async (target) => {
    try {
      await fetch(`${target}/v1/jobs`, {
        method: 'POST', mode: 'no-cors', credentials: 'include', headers: { 'Content-Type': 'text/plain' },
        body: JSON.stringify({ tenant: 'research', name: 'cross-site', resources: { flavor: 'h100-80gb', gpus: 1 }, command: ['true'] }),
      });
    } catch (e) { /* refused: as good */ }
  }, url);
  await other.close();
  check(!(await jobsOfResearch()).includes('cross-site'), 'a write from another origin with the browser\'s cookies wrote nothing');

  // Sign out: the daemon forgets the session; the old cookie, replayed, is refused.
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByRole('link', { name: `Sign in with ${new URL(issuer).host}` }).waitFor();
  await page.waitForFunction(async () => (await fetch('/v1/auth/session')).status === 401);
  check(true, 'after sign-out the browser has no session');
  const replay = await fetch(`${url}/v1/jobs`, { headers: { Cookie: `gpupool_session=${session.value}` } });
  check(replay.status === 401, `the signed-out session's cookie, replayed: ${replay.status}`);
  await shot('sso-03-signed-out');
  check(problems.length === 0, `no page errors${problems.length ? `: ${problems.join('; ')}` : ''}`);
} catch (e) {
  await shot('sso-failure').catch(() => {});
  console.error(`FAIL at step ${step + 1}: ${e.message}`);
  console.error(`page: ${page.url()}`);
  await browser.close();
  process.exit(1);
}
await browser.close();
console.log('PASS');
