// A scripted browser for `gpupool login` (run as $BROWSER URL): it opens the URL the CLI shows
// (an authorization URL, or the device grant's verification_uri_complete) and walks the
// provider's pages as a user would: the device confirmation, the login form (any password), the
// consent form. When the provider sends it back to the CLI's loopback redirect, it first sends a
// forged redirect (another state), which must be refused, then the real one.
// Environment: LOGIN_USER (the account), ABORT=1 to refuse at the device confirmation,
// NODE_EXTRA_CA_CERTS (the provider's certificate). Writes what it did to $BROWSE_LOG.
import fs from 'node:fs';

const log = (line) => fs.appendFileSync(process.env.BROWSE_LOG || '/dev/stderr', `${line}\n`);
const start = new URL(process.argv[2]);
const user = process.env.LOGIN_USER || 'ada';
const jar = new Map();
async function go(url, init = {}) {
  const headers = { ...(init.headers || {}) };
  if (url.origin === start.origin) headers.cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
  const res = await fetch(url, { ...init, headers, redirect: 'manual' });
  if (url.origin === start.origin) {
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const at = pair.indexOf('=');
      jar.set(pair.slice(0, at), pair.slice(at + 1));
    }
  }
  return res;
}
const post = (fields) => ({ method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields) });
const unescape = (s) => s.replace(/&amp;/g, '&').replace(/&quot;/g, '"').replace(/&#x27;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>');

let url = start;
let res = await go(url);
for (let hops = 0; hops < 20; hops++) {
  if (res.status >= 300 && res.status < 400) {
    const next = new URL(res.headers.get('location'), url);
    if (next.origin !== start.origin && next.hostname === '127.0.0.1' && next.pathname === '/callback') {
      const forged = new URL(next);
      forged.searchParams.set('state', 'forged');
      forged.searchParams.set('code', 'forged');
      log(`forged redirect: ${(await fetch(forged)).status}`);
      const back = await fetch(next);
      log(`redirect to the CLI: ${back.status}`);
      process.exit(back.status === 200 ? 0 : 1);
    }
    url = next;
    res = await go(url);
    continue;
  }
  const page = await res.text();
  const form = page.match(/<form[^>]*action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/);
  if (res.status !== 200 || !form) {
    log(`done at HTTP ${res.status}: ${page.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ').slice(0, 200)}`);
    process.exit(res.status === 200 ? 0 : 1);
  }
  const fields = {};
  for (const m of form[2].matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"\/?>/g)) fields[m[1]] = unescape(m[2]);
  if (page.includes('name="login"')) Object.assign(fields, { login: user, password: 'any' });
  if (page.includes('op.deviceConfirmForm') && process.env.ABORT === '1') {
    delete fields.confirm;
    fields.abort = 'yes';
  }
  log(`form ${form[1]}: ${Object.keys(fields).join(',')}`);
  url = new URL(unescape(form[1]), url);
  res = await go(url, post(fields));
}
log('too many pages');
process.exit(1);
