// A test OpenID issuer made of Node's own crypto and https (no packages): it serves discovery
// and the JWKS over HTTPS and signs tokens, so the daemon's OIDC path (discovery, key cache,
// rotation, mappings) is tested end to end without a login. Usage:
//   node test_issuer.mjs keygen DIR KID ALG    # RS256 | RS384 | ES256; the new key signs from now on
//   node test_issuer.mjs serve DIR             # needs DIR/tls.pem, DIR/tls.key; writes DIR/port
//   node test_issuer.mjs mint DIR KID 'CLAIMS' ['HEADER']   # a token; iss/aud/iat/exp defaulted
import crypto from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';

const [cmd, dir, ...rest] = process.argv.slice(2);
const b64 = (buf) => Buffer.from(buf).toString('base64url');
const keyFile = (kid) => `${dir}/keys/${kid}.json`;

function publish() {
  // Newest key first: issuers publish the next key before they sign with it.
  const names = fs.readdirSync(`${dir}/keys`).map((f) => `${dir}/keys/${f}`);
  names.sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs);
  const keys = names.map((f) => JSON.parse(fs.readFileSync(f, 'utf8')).public);
  fs.writeFileSync(`${dir}/jwks.json`, JSON.stringify({ keys }));
}

if (cmd === 'keygen') {
  const [kid, alg] = rest;
  const { publicKey, privateKey } = alg === 'ES256'
    ? crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' })
    : crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  fs.mkdirSync(`${dir}/keys`, { recursive: true });
  const pub = { ...publicKey.export({ format: 'jwk' }), kid, alg, use: 'sig' };
  fs.writeFileSync(keyFile(kid), JSON.stringify({ alg, public: pub, private: privateKey.export({ format: 'jwk' }) }));
  publish();
} else if (cmd === 'serve') {
  const server = https.createServer({ cert: fs.readFileSync(`${dir}/tls.pem`), key: fs.readFileSync(`${dir}/tls.key`) },
    (req, res) => {
      const issuer = fs.readFileSync(`${dir}/issuer`, 'utf8').trim();
      let body;
      if (req.url === '/.well-known/openid-configuration') body = { issuer, jwks_uri: `${issuer}/jwks` };
      if (req.url === '/jwks') body = JSON.parse(fs.readFileSync(`${dir}/jwks.json`, 'utf8'));
      fs.appendFileSync(`${dir}/requests.log`, `${req.url}\n`);
      res.writeHead(body ? 200 : 404, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body ?? { error: 'not found' }));
    });
  server.listen(0, '127.0.0.1', () => {
    const port = server.address().port;
    fs.writeFileSync(`${dir}/issuer`, `https://127.0.0.1:${port}\n`);
    fs.writeFileSync(`${dir}/port`, `${port}\n`);
  });
} else if (cmd === 'mint') {
  const [kid, claimsText, headerText] = rest;
  const k = JSON.parse(fs.readFileSync(keyFile(kid), 'utf8'));
  const now = Math.floor(Date.now() / 1000);
  const claims = { iss: fs.readFileSync(`${dir}/issuer`, 'utf8').trim(), aud: 'gpupool', iat: now, exp: now + 300,
    ...JSON.parse(claimsText) };
  const header = { alg: k.alg, kid, typ: 'JWT', ...JSON.parse(headerText ?? '{}') };
  const input = `${b64(JSON.stringify(header))}.${b64(JSON.stringify(claims))}`;
  const key = crypto.createPrivateKey({ key: k.private, format: 'jwk' });
  const sig = header.alg === 'none' ? Buffer.alloc(0)
    : crypto.sign(k.alg === 'RS384' ? 'sha384' : 'sha256', Buffer.from(input),
      k.alg === 'ES256' ? { key, dsaEncoding: 'ieee-p1363' } : key);
  process.stdout.write(`${input}.${b64(sig)}\n`);
} else {
  console.error('usage: test_issuer.mjs keygen|serve|mint DIR ...');
  process.exit(2);
}
