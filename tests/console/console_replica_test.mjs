// The console on a daemon with replicas (docs/design/daemon.md, "Replicas"), in Debian's headless
// Chromium: opened on a follower's URL, the page moves to the leader (its /healthz names it),
// where one signs in and writes.
// Usage: node console_replica_test.mjs FOLLOWER_URL LEADER_URL ADMIN_TOKEN
import { chromium } from 'playwright-core';

const [followerUrl, leaderUrl, adminToken] = process.argv.slice(2);
if (!followerUrl || !leaderUrl || !adminToken) {
  console.error('usage: node console_replica_test.mjs FOLLOWER_URL LEADER_URL ADMIN_TOKEN');
  process.exit(2);
}
let step = 0;
function check(cond, what) {
  if (!cond) throw new Error(`check failed: ${what}`);
  console.log(`ok ${++step} - ${what}`);
}

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const page = await (await browser.newContext()).newPage();
page.setDefaultTimeout(15000);
const problems = [];
page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
try {
  await page.goto(`${followerUrl}/#/jobs`);
  await page.waitForURL((u) => u.origin === new URL(leaderUrl).origin);
  check(page.url().startsWith(leaderUrl) && page.url().endsWith('#/jobs'), `the follower's console moved to the leader (${page.url()})`);
  await page.getByLabel('Access token').fill(adminToken);
  await page.keyboard.press('Enter');
  await page.locator('#whoami', { hasText: 'admin' }).waitFor();
  check(true, 'signed in on the leader');
  const r = await page.evaluate(async (token) => {
    const res = await fetch('/v1/jobs', {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ tenant: 'a', name: 'from-console', replicas: 1,
        resources: { flavor: 'h100-80gb', gpus: 1 }, duration_estimate_s: 60, command: ['true'] }),
    });
    return res.status;
  }, adminToken);
  check(r === 201, `a write from the console's origin is acknowledged (${r})`);
  check(problems.length === 0, `no page errors (${problems.join('; ')})`);
} finally {
  await browser.close();
}
