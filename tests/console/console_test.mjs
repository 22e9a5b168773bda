// The gpupool console driven in Debian's headless Chromium by playwright-core.
// Usage: node console_test.mjs URL ADMIN_TOKEN ARTIFACT_DIR
// The daemon behind URL has tenants research and product, agents on n-0 and n-1 (fake H100s,
// jobs run for real) and a MIG node m-0 without an agent. The browser runs in Asia/Tokyo
// (UTC+9, no daylight saving) so the time-zone checks are exact.
import { chromium } from 'playwright-core';
import path from 'node:path';

const [url, adminToken, outDir] = process.argv.slice(2);
if (!url || !adminToken || !outDir) {
  console.error('usage: node console_test.mjs URL ADMIN_TOKEN ARTIFACT_DIR');
  process.exit(2);
}
const TZ = 'Asia/Tokyo';
let step = 0;
const started = Date.now();

function check(cond, what) {
  if (!cond) throw new Error(`check failed: ${what}`);
  console.log(`ok ${++step} - ${what}`);
}

async function apiAs(token, method, p, body) {
  const r = await fetch(url + p, {
    method,
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : null };
}

async function newToken(name, role, tenant) {
  const r = await apiAs(adminToken, 'POST', '/v1/tokens', { name, role, tenant });
  if (r.status !== 201) throw new Error(`token ${name}: ${JSON.stringify(r.body)}`);
  return r.body;
}

// Tomorrow's date in Tokyo as YYYY-MM-DD.
function tokyoTomorrow() {
  const parts = new Intl.DateTimeFormat('en-CA', { timeZone: TZ, year: 'numeric', month: '2-digit', day: '2-digit' })
    .format(new Date(Date.now() + 86400e3));
  return parts;  // en-CA formats as 2026-12-01
}

const research = await newToken('alice', 'member', 'research');
const product = await newToken('bob', 'member', 'product');

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const context = await browser.newContext({ timezoneId: TZ, locale: 'en-GB', viewport: { width: 1280, height: 900 } });
const page = await context.newPage();
page.setDefaultTimeout(15000);
const problems = [];
page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
page.on('console', (m) => {
  // Refused API requests (401 for the wrong token, 404, 409) are logged by Chromium itself;
  // anything else, a missing asset or a CSP violation above all, is a defect.
  const refusedApi = /Failed to load resource: the server responded with a status of (401|404|409)/.test(m.text()) &&
    (m.location().url || '').includes('/v1/');
  if (m.type() === 'error' && !refusedApi) problems.push(`console error: ${m.text()} (${m.location().url})`);
});
// Every API answer the page gets while `recording` is set (the isolation check reads them all).
let recording = null;
page.on('response', async (r) => {
  if (!recording || !r.url().includes('/v1/')) return;
  const into = recording;
  try { into.push({ url: r.url(), body: await r.text() }); } catch (e) { /* navigated away */ }
});
page.on('dialog', (d) => d.accept());
const shot = (name) => page.screenshot({ path: path.join(outDir, `${name}.png`), fullPage: true });
const loaded = (view) => page.waitForSelector(`body[data-loaded="${view}"]`);
const text = (sel) => page.locator(sel).innerText();

async function signIn(token, who) {
  await page.getByLabel('Access token').fill(token);
  await page.keyboard.press('Enter');
  await page.locator('#whoami', { hasText: who }).waitFor();
}

async function signOut() {
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByLabel('Access token').waitFor();
}

async function go(view) {
  await page.locator(`#nav a[data-view="${view}"]`).click();
  await loaded(view);
}

try {
  // --- Sign in: a wrong token is refused with a clear message.
  await page.goto(url + '/');
  check((await page.title()) === 'gpupool', 'the daemon serves the console at /');
  await page.getByLabel('Access token').fill('gp_not_a_real_token');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByText('That token was not accepted').waitFor();
  check(true, 'a wrong token is refused with a message');
  await shot('01-sign-in-refused');

  // --- Tenant research: overview.
  await signIn(research.token, 'member of research');
  await loaded('overview');
  check((await text('#quotas')).match(/h100-80gb\s+2\s+0\s+0\s+4/) !== null, 'overview shows the guarantee 2, nothing in use, borrow limit 4');
  check((await text('#tz')).includes(TZ), `the footer names the viewer's time zone (${TZ})`);
  check(await page.locator('#nav a[data-view="cluster"]').count() === 0, 'a tenant has no operator views');
  await shot('02-tenant-overview');

  // --- Keyboard: from the top of the page, Tab reaches the Jobs link and Enter opens it.
  await page.evaluate(() => { document.activeElement?.blur(); window.scrollTo(0, 0); });
  let reached = false;
  for (let i = 0; i < 12 && !reached; ++i) {
    await page.keyboard.press('Tab');
    reached = await page.evaluate(() => document.activeElement?.dataset?.view === 'jobs');
  }
  check(reached, 'Tab reaches the Jobs link');
  await page.keyboard.press('Enter');
  await loaded('jobs');
  check(await page.evaluate(() => document.activeElement?.id) === 'view-title', 'focus moves to the view heading');
  check((await text('#job-list')).includes('No jobs yet'), 'an empty job list says so');

  // --- Submit a job and watch it run (live updates, no reload).
  await page.getByLabel('Name', { exact: true }).fill('hello-console');
  await page.getByLabel('GPU model').selectOption('h100-80gb');
  await page.getByLabel('Amount').fill('2');
  await page.getByLabel('Priority class').selectOption('batch');
  await page.getByLabel('Command').fill('sh -c "echo hello-from-console on $CUDA_VISIBLE_DEVICES; sleep 4"');
  await page.getByRole('button', { name: 'Submit' }).click();
  await page.locator('#job-list tr', { hasText: 'hello-console' }).waitFor();
  const jobId = (await page.locator('#job-list tr', { hasText: 'hello-console' }).locator('td').first().innerText()).trim();
  check(/^\d+$/.test(jobId), `the new job ${jobId} is listed`);
  await page.locator('#job-detail .badge', { hasText: 'running' }).waitFor({ timeout: 20000 });
  check(true, `job ${jobId} shows as running without a reload`);
  await shot('03-job-running');
  await page.locator('#job-detail .badge', { hasText: 'succeeded' }).waitFor({ timeout: 30000 });
  await page.locator('#job-detail pre.stdout', { hasText: 'hello-from-console on GPU-fake-' }).waitFor();
  check(true, `job ${jobId} succeeded and its stdout (with its GPUs' UUIDs) is shown`);
  const events = await page.locator('#job-detail table.events td.event-type').allInnerTexts();
  check(['submitted', 'admitted', 'started', 'succeeded'].every((t) => events.includes(t)),
    `job ${jobId}'s events are listed: ${events.join(', ')}`);
  await shot('04-job-logs');
  // Keyboard focus survives the live redraws: in the log, across two polls.
  await page.locator('#job-detail pre.stdout').focus();
  await page.waitForTimeout(4500);
  check(await page.evaluate(() => document.activeElement?.dataset?.key) === 'out-0', 'focus stays in the log across live updates');
  await page.getByRole('button', { name: `Details of job ${jobId}` }).click();
  // The details load first, then take the focus.
  const moved = await page.waitForFunction(() => document.activeElement?.dataset?.key === 'detail-title', null, { timeout: 5000 })
    .then(() => true, () => false);
  check(moved, 'Details moves focus to the job\'s heading');

  // A double click submits once: the form's idempotency key and its disabled button.
  await page.getByLabel('Name', { exact: true }).fill('double');
  await page.getByLabel('Amount').fill('1');
  await page.getByLabel('Command').fill('true');
  await page.getByRole('button', { name: 'Submit' }).dblclick();
  await page.locator('#job-list tr', { hasText: 'double' }).first().waitFor();
  await page.waitForTimeout(2500);
  const doubles = (await apiAs(research.token, 'GET', '/v1/jobs')).body.items.filter((j) => j.name === 'double');
  check(doubles.length === 1, `a double click on Submit made ${doubles.length} job(s), not 2`);
  await page.getByLabel('Command').fill('sh -c "echo unclosed');
  await page.getByRole('button', { name: 'Submit' }).click();
  await page.getByText('the command has a quote that is not closed').waitFor();
  check(true, 'an unclosed quote in the command is refused before sending');

  // A job that cannot fit says why it waits, and can be cancelled.
  await page.getByLabel('Name', { exact: true }).fill('too-big');
  await page.getByLabel('Amount').fill('16');
  await page.getByLabel('Command').fill('true');
  await page.getByRole('button', { name: 'Submit' }).click();
  const bigRow = page.locator('#job-list tr', { hasText: 'too-big' });
  await bigRow.locator('.reason').filter({ hasNotText: 'not yet considered' }).waitFor();
  check((await bigRow.locator('.reason').innerText()).length > 5, `a waiting job shows its pending reason: "${await bigRow.locator('.reason').innerText()}"`);
  await bigRow.getByRole('button', { name: /^Cancel/ }).click();
  await page.locator('#job-list tr', { hasText: 'too-big' }).locator('.badge', { hasText: 'cancelled' }).waitFor();
  check(true, 'the waiting job was cancelled from the list');

  // --- Reserve capacity in the calendar; times are entered and shown in Tokyo time.
  await go('calendar');
  await page.locator('#cal-flavor').selectOption('h100-80gb');
  const day = tokyoTomorrow();
  const form = page.locator('#reserve-form');
  await form.getByLabel('GPU model').selectOption('h100-80gb');
  await form.getByLabel('GPUs').fill('2');
  await form.getByLabel(/^Start/).fill(`${day}T10:00`);
  await form.getByLabel('Hours').fill('2');
  await form.getByRole('button', { name: 'Check availability' }).click();
  await page.locator('#reserve-result', { hasText: 'can be reserved' }).waitFor();
  check(true, `availability answers: "${await text('#reserve-result')}"`);
  await form.getByRole('button', { name: 'Reserve' }).click();
  await page.locator('#reserve-result', { hasText: 'Reserved: reservation' }).waitFor();
  const mine = (await apiAs(research.token, 'GET', '/v1/reservations')).body.items;
  check(mine.length === 1 && Date.parse(mine[0].start) === Date.parse(`${day}T01:00:00Z`) && mine[0].gpus === 2,
    `10:00 in Tokyo was booked as ${mine[0]?.start} (01:00 UTC)`);
  const row = page.locator('#reservation-list tr', { hasText: mine[0].id });
  await row.waitFor();
  check((await row.innerText()).includes('10:00') && (await row.innerText()).includes('12:00'), 'the reservation is listed at 10:00-12:00 local time');
  // Buckets start at local midnight: 10:00 falls in the 06:00-12:00 bucket, 21:00 UTC the day before.
  const cell = page.locator(`#calendar td[data-start="${new Date(`${day}T06:00:00+09:00`).toISOString()}"]`);
  await cell.locator('.res').waitFor();
  check((await cell.innerText()).includes('R2'), 'the calendar shows 2 reserved GPUs in the 06:00-12:00 bucket of that day');
  await shot('05-calendar-reserved');

  // --- Costs: the job that ran is billed.
  await go('costs');
  await page.locator('#cost-table tr', { hasText: 'guaranteed' }).waitFor();
  check(await page.locator('#cost-chart svg.chart rect').count() > 0, 'the cost chart has bars');
  check((await text('#cost-table')).includes('research'), 'the cost table has research\'s usage');
  await shot('06-costs');

  // research keeps a job running on the agents while product looks around.
  const long = await apiAs(research.token, 'POST', '/v1/jobs', {
    tenant: 'research', name: 'research-long', priority_class: 'training', replicas: 1,
    resources: { flavor: 'h100-80gb', gpus: 2 }, duration_estimate_s: 3600,
    command: ['sh', '-c', 'while kill -0 $PPID 2>/dev/null; do sleep 0.2; done'],
  });
  check(long.status === 201, 'research starts a long job');

  // --- Revoking the token while signed in: the console signs out with a message.
  const revoke = await apiAs(adminToken, 'DELETE', `/v1/tokens/${research.id}`);
  check(revoke.status === 200, 'the admin revoked alice\'s token');
  await page.locator('#nav a[data-view="jobs"]').click();  // the next request meets the 401
  await page.getByText('no longer accepted').waitFor();
  check(await page.getByLabel('Access token').isVisible(), 'a revoked token returns to the sign-in form with a message');

  // --- Tenant product sees none of research's data, on screen or in any answer the page gets.
  const answers = [];
  recording = answers;
  await signIn(product.token, 'member of product');
  await loaded('overview');
  await page.evaluate(() => { location.hash = '#/cluster'; });
  await page.waitForFunction(() => location.hash === '#/overview' && document.body.dataset.loaded === 'overview');
  check(await page.locator('#cluster-map').count() === 0, 'a tenant sent to #/cluster lands on its overview, with no map');
  for (const view of ['overview', 'jobs', 'calendar', 'costs']) {
    await go(view);
    const all = await page.locator('main').innerText();
    check(!all.includes('research') && !all.includes('hello-console'), `product's ${view} shows nothing of research`);
  }
  await go('jobs');
  check((await text('#job-list')).includes('No jobs yet'), 'product has no jobs');
  check(await page.locator('#reservation-list').count() === 0, 'the reservation list belongs to the calendar view only');
  const peek = await page.evaluate(async ([id, token]) => (await fetch(`/v1/jobs/${id}`, { headers: { Authorization: `Bearer ${token}` } })).status, [jobId, product.token]);
  check(peek === 404, `research's job ${jobId} is 404 for product, even asked directly`);
  // Work for the map: a running job on the agents and a MIG slice.
  await page.getByLabel('Name', { exact: true }).fill('serve-model');
  await page.getByLabel('GPU model').selectOption('h100-80gb');
  await page.getByLabel('Amount').fill('1');
  await page.getByLabel('Command').fill('sh -c "while kill -0 $PPID 2>/dev/null; do sleep 0.2; done"');
  await page.getByRole('button', { name: 'Submit' }).click();
  await page.locator('#job-list tr', { hasText: 'serve-model' }).locator('.badge', { hasText: 'running' }).waitFor({ timeout: 20000 });
  await page.getByLabel('Name', { exact: true }).fill('notebook');
  await page.getByLabel('GPU model').selectOption('a100-40gb');
  await page.getByLabel('Kind').selectOption('mig_profile');
  await page.getByLabel('Amount').fill('1g.5gb');
  await page.getByRole('button', { name: 'Submit' }).click();
  await page.locator('#job-list tr', { hasText: 'notebook' }).locator('.badge', { hasText: /admitted|running/ }).waitFor({ timeout: 20000 });
  check(true, 'product runs a whole-GPU job and holds a MIG slice');
  await shot('07-product-jobs');
  await go('overview');
  await page.waitForTimeout(2500);  // a poll with both tenants' jobs running
  recording = null;
  const leaks = answers.filter((a) => ['research', 'hello-console', 'research-long', 'alice'].some((w) => a.body.includes(w)));
  check(answers.length > 20 && leaks.length === 0,
    `none of the ${answers.length} API answers product's page got names research or its jobs${leaks.length ? `: ${leaks[0].url} ${leaks[0].body.slice(0, 300)}` : ''}`);
  await signOut();

  // --- A tenant admin of product also has its tenant's audit log, and only its tenant's.
  const carol = await newToken('carol', 'tenant-admin', 'product');
  await signIn(carol.token, 'tenant-admin of product');
  await go('audit');
  const ownAudit = await text('#audit');
  check(ownAudit.includes('job.submit') && ownAudit.includes('bob') && !ownAudit.includes('alice') && !ownAudit.includes('research'),
    'a tenant admin reads its own tenant\'s audit log, without research\'s entries');
  await signOut();

  // --- Operator: cluster map, drains, tenants, reservations, audit.
  await signIn(adminToken, 'cluster-admin');
  await loaded('cluster');
  const map = page.locator('#cluster-map');
  check(await map.locator('section.node').count() === 3, 'the cluster map shows the 3 nodes');
  check(await map.locator('.gpu').count() === 10, 'and their 10 GPUs');
  check(await map.locator('.gpu[aria-label*="product job"]').count() >= 1, 'a GPU is labelled with product\'s job');
  check(await map.locator('.gpu.mig[aria-label*="1g.5gb product job"]').count() === 1, 'a MIG slice on m-0 is labelled with product\'s job');
  check((await text('#cluster-legend')).includes('product'), 'the legend names the tenants on the map');
  await shot('08-operator-cluster');
  await page.getByRole('button', { name: 'Cordon n-1' }).click();
  await map.locator('section[data-node="n-1"] .badge', { hasText: 'cordoned' }).waitFor();
  check(true, 'cordon from the map');
  await page.getByRole('button', { name: 'Uncordon n-1' }).click();
  await map.locator('section[data-node="n-1"] .badge', { hasText: 'ready' }).waitFor();
  check(true, 'uncordon from the map');

  await go('tenants');
  check((await text('#tenant-usage')).includes('research') && (await text('#tenant-usage')).includes('product'), 'the operator sees every tenant\'s usage');
  await shot('09-operator-tenants');
  await go('calendar');
  await page.locator('#reservation-list tr', { hasText: 'research' }).waitFor();
  check(true, 'the operator sees research\'s reservation');
  await go('audit');
  const audit = await text('#audit');
  check(['job.submit', 'job.cancel', 'reservation.create', 'node.cordon', 'token.revoke'].every((a) => audit.includes(a)),
    'the audit log lists submits, cancels, reservations, cordons and revocations');
  await shot('10-operator-audit');

  // --- Pages: 3 items a page (?page_size=3). "Load more" asks for the next page by its cursor
  // and keeps it across polls; a new job lands on top and nothing loaded goes missing.
  const allJobs = (await apiAs(adminToken, 'GET', '/v1/jobs')).body.items.map((j) => j.id);
  check(allJobs.length >= 6, `enough jobs for two pages of 3 (${allJobs.length})`);
  const listAsked = [];
  const onRequest = (r) => { if (r.url().includes('/v1/jobs?')) listAsked.push(new URL(r.url()).searchParams); };
  page.on('request', onRequest);
  await page.goto(url + '/?page_size=3#/jobs');
  await loaded('jobs');
  const jobRows = () => page.locator('#job-list tbody tr').evaluateAll((trs) => trs.map((tr) => tr.dataset.row));
  const firstPage = await jobRows();
  check(firstPage.join() === allJobs.slice(0, 3).join(), `the jobs view shows the newest 3 jobs first (${firstPage})`);
  await page.getByRole('button', { name: 'Load more jobs' }).focus();
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.querySelectorAll('#job-list tbody tr').length === 6);
  const twoPages = await jobRows();
  check(twoPages.join() === allJobs.slice(0, 6).join(), `Load more adds the next 3 older jobs, none twice (${twoPages})`);
  check(listAsked.some((q) => q.get('limit') === '3' && q.get('cursor')), 'Load more asks for the next page with the cursor');
  check(await page.evaluate(() => document.activeElement?.dataset?.key) === `show-${twoPages[3]}`,
    'focus moves to the first job loaded');
  listAsked.length = 0;
  await page.waitForTimeout(2500);  // at least one poll
  check(listAsked.length >= 1 && listAsked.every((q) => q.get('limit') === '3' && !q.get('cursor')),
    `polling re-reads the first page only (${listAsked.length} polls)`);
  check((await jobRows()).join() === twoPages.join(), 'and the page loaded with Load more stays');
  const newer = await apiAs(product.token, 'POST', '/v1/jobs', {
    tenant: 'product', name: 'on-top', priority_class: 'batch', replicas: 1,
    resources: { flavor: 'h100-80gb', gpus: 1 }, duration_estimate_s: 60, command: ['true'],
  });
  check(newer.status === 201, 'a new job is submitted while pages are loaded');
  await page.locator(`#job-list tr[data-row="${newer.body.id}"]`).waitFor();
  const withNew = await jobRows();
  check(withNew.join() === [newer.body.id, ...twoPages].join(),
    `the new job lands on top, and the job that slid off the first page stays (${withNew})`);
  page.off('request', onRequest);
  await shot('10b-operator-jobs-pages');
  await go('audit');
  check(await page.locator('#audit tbody tr').count() === 3, 'the audit log shows a first page of 3');
  await page.getByRole('button', { name: 'Load more audit entries' }).click();
  await page.waitForFunction(() => document.querySelectorAll('#audit tbody tr').length === 6);
  const auditIds = await page.locator('#audit tbody tr').evaluateAll((trs) => trs.map((tr) => Number(tr.dataset.row)));
  check(auditIds.every((id, i) => i === 0 || id < auditIds[i - 1]), `the audit log's next page is older, none twice (${auditIds})`);

  // --- Daylight saving: Berlin, where Sunday 25 October 2026 has 25 hours.
  const berlin = await browser.newContext({ timezoneId: 'Europe/Berlin', locale: 'en-GB', viewport: { width: 1280, height: 900 } });
  const bp = await berlin.newPage();
  bp.setDefaultTimeout(15000);
  bp.on('pageerror', (e) => problems.push(`page error (Berlin): ${e.message}`));
  const usageAsked = [];
  bp.on('request', (r) => { if (r.url().includes('/v1/usage?')) usageAsked.push(new URL(r.url()).searchParams); });
  await bp.clock.setFixedTime(new Date('2026-10-24T10:00:00Z'));
  await bp.goto(url + '/');
  await bp.getByLabel('Access token').fill(adminToken);
  await bp.keyboard.press('Enter');
  await bp.waitForSelector('body[data-loaded="cluster"]');
  await bp.locator('#nav a[data-view="calendar"]').click();
  await bp.waitForSelector('body[data-loaded="calendar"]');
  await bp.locator('#cal-days').selectOption('3');
  await bp.waitForFunction(() => document.querySelectorAll('#calendar tbody tr').length === 3);
  const rows = await bp.locator('#calendar tbody tr').evaluateAll((trs) => trs.map((tr) => tr.querySelectorAll('td').length));
  check(rows.length === 3 && rows.every((n) => n === 4), `the Berlin calendar has 3 days of 4 slots around the change (${rows})`);
  const sunday0 = bp.locator('#calendar td[data-start="2026-10-24T22:00:00.000Z"]');
  const sunday1 = bp.locator('#calendar td[data-start="2026-10-25T05:00:00.000Z"]');
  check((await sunday0.getAttribute('aria-label')).includes('7 h') && (await sunday1.getAttribute('aria-label')).includes('6 h'),
    'Sunday 00:00-06:00 folds the 7 hours of that night, and 06:00 starts at 05:00 UTC');
  await bp.clock.setFixedTime(new Date('2026-10-27T10:00:00Z'));
  usageAsked.length = 0;
  await bp.locator('#nav a[data-view="costs"]').click();
  await bp.waitForSelector('body[data-loaded="costs"]');
  const labels = await bp.locator('#cost-chart svg text.axis').allTextContents();
  const sunday = usageAsked.find((q) => q.get('from') === '2026-10-24T22:00:00.000Z');
  check(labels.filter((l) => l === 'Sun 25 Oct').length === 1 && sunday && sunday.get('to') === '2026-10-25T23:00:00.000Z',
    `the per-day costs have one bar for Sunday 25 October, asked for its 25 hours (${labels.join('|')}; ${usageAsked.map((q) => q.get('from')).join(' ')})`);
  await bp.screenshot({ path: path.join(outDir, '11-berlin-dst-calendar.png'), fullPage: true });
  await berlin.close();

  check(problems.length === 0, `no page errors or CSP violations${problems.length ? `: ${problems.join(' | ')}` : ''}`);
  console.log(`console test passed: ${step} checks in ${((Date.now() - started) / 1000).toFixed(1)} s`);
} catch (e) {
  await shot('failure').catch(() => {});
  console.error(e.message);
  if (problems.length) console.error(`page problems: ${problems.join(' | ')}`);
  await browser.close();
  process.exit(1);
}
await browser.close();
