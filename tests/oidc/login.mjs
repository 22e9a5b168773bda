// A scripted login at the provider (provider.mjs): authorization code with PKCE, as a browser
// would do it (cookies, the login form, the consent form), then the code for tokens. Prints the
// token response (id_token, refresh_token, ...) as JSON. Usage: node login.mjs ISSUER USER [CLIENT]
import crypto from 'node:crypto';

const [issuer, user, client = 'gpupool'] = process.argv.slice(2);
const jar = new Map();
async function go(url, init = {}) {
  const headers = { ...(init.headers || {}), cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') };
  const res = await fetch(new URL(url, issuer), { ...init, headers, redirect: 'manual' });
  for (const c of res.headers.getSetCookie()) {
    const [pair] = c.split(';');
    const at = pair.indexOf('=');
    jar.set(pair.slice(0, at), pair.slice(at + 1));
  }
  return res;
}
const form = (o) => ({ method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(o) });

const verifier = crypto.randomBytes(32).toString('base64url');
const challenge = crypto.createHash('sha256').update(verifier).digest('base64url');
const redirect = 'http://127.0.0.1/callback';
let res = await go(`/auth?${new URLSearchParams({ client_id: client, response_type: 'code', scope: 'openid email groups offline_access',
  redirect_uri: redirect, code_challenge: challenge, code_challenge_method: 'S256', state: 's1', nonce: 'n1', prompt: 'consent' })}`);
let code;
for (let hops = 0; hops < 12 && !code; hops++) {
  const location = res.headers.get('location');
  if (!location) throw new Error(`stuck at HTTP ${res.status}: ${(await res.text()).slice(0, 300)}`);
  if (location.startsWith(redirect)) {
    code = new URL(location).searchParams.get('code');
    break;
  }
  res = await go(location);
  if (res.status === 200) {
    const page = await res.text();
    const action = page.match(/action="([^"]+)"/)[1];
    const fields = page.includes('name="login"') ? { prompt: 'login', login: user, password: 'any' } : { prompt: 'consent' };
    res = await go(action, form(fields));
  }
}
if (!code) throw new Error('no authorization code');
const token = await go('/token', form({ grant_type: 'authorization_code', code, redirect_uri: redirect, client_id: client, code_verifier: verifier }));
const body = await token.json();
if (!body.id_token) throw new Error(`no id_token: ${JSON.stringify(body)}`);
process.stdout.write(`${JSON.stringify(body)}\n`);
