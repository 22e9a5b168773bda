// A real OpenID Provider for the tests: the oidc-provider package (certified OpenID Connect),
// over HTTPS on loopback, with its development login form (any password) and accounts read from
// a file the test rewrites (to take a user out of a group); the device grant (RFC 8628) and
// revocation (RFC 7009) on. Usage:
//   node provider.mjs DIR   # DIR/tls.pem, tls.key, accounts.json; writes DIR/issuer; DIR/jwks.json
//                           # (private keys, first signs) is made on the first start and kept
import crypto from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import Provider from 'oidc-provider';

const dir = process.argv[2];
const jwksFile = `${dir}/jwks.json`;
if (!fs.existsSync(jwksFile)) {
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  fs.writeFileSync(jwksFile, JSON.stringify({ keys: [{ ...privateKey.export({ format: 'jwk' }), kid: 'r1', alg: 'RS256', use: 'sig' }] }));
}
const accounts = () => JSON.parse(fs.readFileSync(`${dir}/accounts.json`, 'utf8'));
const port = Number(process.argv[3] || 0);

const server = https.createServer({ cert: fs.readFileSync(`${dir}/tls.pem`), key: fs.readFileSync(`${dir}/tls.key`) });
server.listen(port, '127.0.0.1', () => {
  const issuer = `https://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: [{
      client_id: 'gpupool', token_endpoint_auth_method: 'none', application_type: 'native',
      grant_types: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code'], response_types: ['code'],
      // The CLI's loopback redirect and the console's (the daemon on loopback); a native
      // client's loopback redirect matches on any port (RFC 8252 7.3).
      redirect_uris: ['http://127.0.0.1/callback', 'http://127.0.0.1/v1/auth/callback'],
    }, {
      // Another application of the same provider: its tokens' aud is not gpupool's.
      client_id: 'other', token_endpoint_auth_method: 'none', application_type: 'native',
      grant_types: ['authorization_code'], response_types: ['code'], redirect_uris: ['http://127.0.0.1/callback'],
    }],
    findAccount: async (ctx, id) => {
      const a = accounts()[id];
      if (!a) return undefined;
      return { accountId: id, claims: async () => ({ sub: id, email: a.email, groups: a.groups }) };
    },
    claims: { openid: ['sub'], email: ['email'], groups: ['groups'] },
    scopes: ['openid', 'email', 'groups', 'offline_access'],
    conformIdTokenClaims: false,
    features: { devInteractions: { enabled: true }, deviceFlow: { enabled: true }, revocation: { enabled: true } },
    jwks: JSON.parse(fs.readFileSync(jwksFile, 'utf8')),
    ttl: { IdToken: Number(process.env.ID_TOKEN_TTL || 300) },
    cookies: { keys: ['test-cookie-key'] },
  });
  server.on('request', provider.callback());
  fs.writeFileSync(`${dir}/issuer`, `${issuer}\n`);
});
