// Download links and the gateway's transport headers against real gateways (in-process): a link signed
// with the real key but an expiry beyond what the deployment ever mints is refused; every answer
// says nosniff; HSTS is sent when the public address is https, or the request came over https
// through a trusted proxy, never on plain http and never on a client's unverified word.
import { CLOCK_SKEW_SECONDS, LinkSigner } from '@media/domain';
import { loadLinkSigningKey } from '@media/storage';
import { api, freePort, TestStack, type TestWorkspace } from '../support/stack';
import { expectApiError } from '../support/http';

const HSTS = 'max-age=31536000; includeSubDomains';

let stack: TestStack;
let ws: TestWorkspace;

beforeAll(async () => {
  // Behind one proxy (an Ingress), which says in X-Forwarded-Proto how the client came in.
  stack = await TestStack.start(['api-gateway'], { TRUST_PROXY: '1' }, { inProcess: true });
  ws = await stack.createWorkspace('links');
}, 60_000);

afterAll(async () => {
  await stack?.stop();
});

describe('download links', () => {
  it('refuses a link whose expiry lies further ahead than LINK_TTL_SECONDS, even signed with the real key', async () => {
    const key = await loadLinkSigningKey(stack.redis, stack.keys, undefined);
    const path = `${ws.workspaceId}/req_missing/0.png`;
    // What a leaked key makes possible: a link until the year 5138.
    const forged = new LinkSigner(key, stack.baseUrl, 100_000_000_000).mint(path);
    expect(new Date(forged.expires_at * 1000).getUTCFullYear()).toBeGreaterThan(5000);
    const refused = await fetch(forged.url);
    expectApiError({ status: refused.status, headers: refused.headers, json: await refused.json() }, 403, { code: 'invalid_link', type: 'permission_error' });
    // The same key with the deployment's own TTL: the link is good (the file just does not exist).
    const fair = await fetch(new LinkSigner(key, stack.baseUrl, 86_400).mint(path).url);
    expect(fair.status).toBe(404);
    // The edge: another replica's clock may run up to CLOCK_SKEW_SECONDS ahead, not more.
    const skewed = await fetch(new LinkSigner(key, stack.baseUrl, 86_400 + CLOCK_SKEW_SECONDS - 30).mint(path).url);
    expect(skewed.status).toBe(404);
    const beyond = await fetch(new LinkSigner(key, stack.baseUrl, 86_400 + CLOCK_SKEW_SECONDS + 60).mint(path).url);
    expect([beyond.status, ((await beyond.json()) as { error: { code: string } }).error.code]).toEqual([403, 'invalid_link']);
  });
});

describe('transport headers', () => {
  /** Another gateway of this stack on its own port, with some settings changed. */
  async function gatewayWith(env: Record<string, string>): Promise<string> {
    const port = await freePort();
    await stack.startService('api-gateway', { PORT: String(port), ...env });
    return `http://127.0.0.1:${port}`;
  }

  it('sends nosniff on every answer: files, errors, liveness, the OpenAPI document', async () => {
    const answers = [
      await api(stack, ws.apiKey)('/v1/models'),
      await fetch(`${stack.baseUrl}/v1/files/x/y.png?expires=1&signature=${'a'.repeat(43)}`),
      await fetch(`${stack.baseUrl}/nothing-here`),
      await fetch(`${stack.baseUrl}/healthz`),
      await fetch(`${stack.baseUrl}/readyz`),
      await fetch(`${stack.baseUrl}/v1/openapi.json`),
      await fetch(`${stack.baseUrl}/dashboard/`),
    ];
    expect(answers.map((a) => [a.status, a.headers.get('x-content-type-options')])).toEqual([
      [200, 'nosniff'],
      [403, 'nosniff'],
      [404, 'nosniff'],
      [200, 'nosniff'],
      [200, 'nosniff'],
      [200, 'nosniff'],
      [200, 'nosniff'],
    ]);
  });

  it('sends HSTS behind a trusted proxy only for a request that came over https', async () => {
    const plain = await api(stack, ws.apiKey)('/v1/models');
    expect(plain.headers.get('strict-transport-security')).toBeNull();
    for (const path of ['/v1/models', '/healthz', '/v1/nothing-here']) {
      const viaHttps = await api(stack, ws.apiKey)(path, { headers: { 'x-forwarded-proto': 'https' } });
      expect([path, viaHttps.headers.get('strict-transport-security')]).toEqual([path, HSTS]);
    }
  });

  it('ignores X-Forwarded-Proto when no proxy is trusted, and sends HSTS on every answer when the public address is https', async () => {
    const direct = await gatewayWith({ TRUST_PROXY: '' });
    const claimed = await fetch(`${direct}/healthz`, { headers: { 'x-forwarded-proto': 'https' } });
    expect([claimed.status, claimed.headers.get('strict-transport-security')]).toEqual([200, null]);

    const https = await gatewayWith({ TRUST_PROXY: '', PUBLIC_BASE_URL: 'https://media.example.test' });
    for (const path of ['/healthz', '/v1/nothing-here', `/v1/files/x/y.png?expires=1&signature=${'a'.repeat(43)}`]) {
      const res = await fetch(`${https}${path}`);
      expect([path, res.headers.get('strict-transport-security'), res.headers.get('x-content-type-options')]).toEqual([path, HSTS, 'nosniff']);
    }
  });
});
