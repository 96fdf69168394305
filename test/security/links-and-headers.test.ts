// Download links and the gateway's transport headers against a real gateway process: a link signed
// with the real key but an expiry beyond what the deployment ever mints is refused; every answer
// says nosniff; HSTS is sent when the request came over https through a trusted proxy, never on
// plain http.
import express from 'express';
import request from 'supertest';
import { LinkSigner } from '@media/domain';
import { loadLinkSigningKey } from '@media/storage';
import { transportSecurity } from '../../services/api-gateway/src/http/middleware';
import { api, TestStack, type TestWorkspace } from '../support/stack';
import { expectApiError } from '../support/http';

const HSTS = 'max-age=31536000; includeSubDomains';

let stack: TestStack;
let ws: TestWorkspace;

beforeAll(async () => {
  // Behind one proxy (an Ingress), which says in X-Forwarded-Proto how the client came in.
  stack = await TestStack.start(['api-gateway'], { TRUST_PROXY: '1' });
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
  });
});

describe('transport headers', () => {
  it('sends nosniff on every answer, files included, and HSTS only for a request that came over https', async () => {
    const plain = await api(stack, ws.apiKey)('/v1/models');
    expect(plain.headers.get('x-content-type-options')).toBe('nosniff');
    expect(plain.headers.get('strict-transport-security')).toBeNull();
    const file = await fetch(`${stack.baseUrl}/v1/files/x/y.png?expires=1&signature=${'a'.repeat(43)}`);
    expect([file.status, file.headers.get('x-content-type-options')]).toEqual([403, 'nosniff']);
    const viaHttps = await api(stack, ws.apiKey)('/v1/models', { headers: { 'x-forwarded-proto': 'https' } });
    expect(viaHttps.headers.get('strict-transport-security')).toBe(HSTS);
  });

  it('sends HSTS on every answer when the public address is https', async () => {
    const app = express().use(transportSecurity(true)).get('/', (_req, res) => void res.send('ok'));
    const res = await request(app).get('/');
    expect(res.headers['strict-transport-security']).toBe(HSTS);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
  });
});
