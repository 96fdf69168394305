import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { api, eventually } from '../support/stack';
import { expectApiError } from '../support/http';
import { DispatcherHarness } from '../dispatcher/support/harness';
import { DashboardClient } from './support/api-client';
import { loadConfig } from '@media/common';
import { DestinationGate, destinationLimits, destinationOf, type DestinationSignal } from '@media/callbacks';

/**
 * The dashboard's JSON API against the three real services: sessions and their cookie, CSRF, roles,
 * API keys and secrets, the Requests page's reads and retry, usage, test callbacks, members, and
 * that one workspace never sees another's ids.
 */
let h: DispatcherHarness;
let owner: DashboardClient;

/** `GET /session` without a live session: 200, signed out (every other call answers 401 `not_signed_in`). */
const expectSignedOut = (res: { status: number; json: unknown; headers: Headers }) => {
  expect([res.status, res.json]).toEqual([200, { signed_in: false }]);
  expect(res.headers.get('cache-control')).toBe('no-store');
};

const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

beforeAll(async () => {
  // Short gaps, so that a callback to a failing path ends `failed` within seconds.
  h = await DispatcherHarness.start({ WEBHOOK_RETRY_SCHEDULE: '100ms,100ms,100ms,100ms,100ms' }, { inProcess: true });
  h.receiver.script('/fails', () => ({ status: 500, body: '<script>alert(1)</script>' }));
  owner = await DashboardClient.signedIn(h.stack.baseUrl, h.workspace.owner.email, h.workspace.owner.password);
});

afterAll(async () => {
  await h?.stop();
});

describe('sessions', () => {
  it('signs in with the credentials create-workspace printed, into an HttpOnly SameSite=Strict cookie on /dashboard', async () => {
    const client = new DashboardClient(h.stack.baseUrl);
    const res = await client.signIn(h.workspace.owner.email.toUpperCase(), h.workspace.owner.password);
    expect(res.status).toBe(200);
    expect(res.json).toEqual({
      member: { email: h.workspace.owner.email, role: 'owner' },
      workspace: { id: h.workspace.workspaceId, name: 'test' },
      csrf_token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
    });
    const flags = res.setCookie!.split(';').map((s) => s.trim());
    expect(flags[0]).toMatch(/^media_session=[A-Za-z0-9_-]{43}$/);
    expect(flags).toEqual(expect.arrayContaining(['Path=/dashboard', 'HttpOnly', 'SameSite=Strict']));
    // PUBLIC_BASE_URL is http in tests; behind https the cookie is also Secure.
    expect(flags).not.toContain('Secure');
    const session = await client.call('GET', '/session');
    expect(session.status).toBe(200);
    expect(session.headers.get('cache-control')).toBe('no-store');
    expect(session.headers.get('content-security-policy')).toBe(CSP);
    expect(session.headers.get('x-content-type-options')).toBe('nosniff');
    expect(session.headers.get('referrer-policy')).toBe('no-referrer');
  });

  it('refuses a wrong password with 401, slows down repeated failures from one address with 429, and never locks the owner out from another', async () => {
    const ws = await h.stack.createWorkspace('throttled');
    const attacker = new DashboardClient(h.stack.baseUrl);
    expectApiError(await attacker.signIn(ws.owner.email, 'wrong'), 401, { code: 'invalid_credentials', type: 'authentication_error' });
    expectApiError(await attacker.signIn('nobody@nowhere.test', 'wrong'), 401, { code: 'invalid_credentials' });
    for (let i = 1; i < 5; i++) expect((await attacker.signIn(ws.owner.email, 'wrong')).status).toBe(401);
    // Past the free tries each attempt waits twice as long as the one before, from a second. Two more
    // failures, each once its wait is over, make the wait four seconds: longer than a busy machine
    // takes between two requests (a second was not, with its password check in between).
    for (const waitMs of [1_000, 2_000]) {
      await new Promise((r) => setTimeout(r, waitMs));
      expect((await attacker.signIn(ws.owner.email, 'wrong')).status).toBe(401);
    }
    // From the attacker's address, even the right password now waits.
    const refused = await attacker.signIn(ws.owner.email, ws.owner.password);
    expectApiError(refused, 429, { code: 'sign_in_rate_limited', type: 'rate_limit_error' });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(attacker.cookie).toBeUndefined();
    // The owner, from another address, signs in at once.
    const elsewhere = new DashboardClient(h.stack.baseUrl, '127.0.0.2');
    expect((await elsewhere.signIn(ws.owner.email, ws.owner.password)).status).toBe(200);
    expect((await elsewhere.call('GET', '/session')).json.member.email).toBe(ws.owner.email);
  });

  it('signs out: the cookie is cleared and the session ends on the server', async () => {
    const client = await DashboardClient.signedIn(h.stack.baseUrl, h.workspace.owner.email, h.workspace.owner.password);
    const stolen = client.cookie;
    const out = await client.call('DELETE', '/session');
    expect(out.status).toBe(204);
    expect(out.setCookie).toMatch(/^media_session=; Path=\/dashboard; HttpOnly; SameSite=Strict; Max-Age=0/);
    client.cookie = stolen;
    expectSignedOut(await client.call('GET', '/session'));
    expectApiError(await client.call('GET', '/keys'), 401, { code: 'not_signed_in' });
    // So does a browser that never signed in: the page asks on every visit, and a 4xx would be a console error.
    expectSignedOut(await new DashboardClient(h.stack.baseUrl).call('GET', '/session'));
  });

  it('refuses a state-changing request without the CSRF token or with a wrong one', async () => {
    expectApiError(await owner.call('POST', '/secrets/reveal', { csrf: null }), 403, { code: 'csrf_failed', type: 'permission_error' });
    expectApiError(await owner.call('POST', '/secrets/reveal', { csrf: `${owner.csrf!.slice(0, -1)}x` }), 403, { code: 'csrf_failed' });
    expectApiError(await owner.call('POST', '/keys', { csrf: 'short' }), 403, { code: 'csrf_failed' });
    expect((await owner.call('POST', '/secrets/reveal')).status).toBe(200);
  });

  it("answers a page's read 401 session_changed once the browser signed in again in another tab, rather than the new session's data", async () => {
    const browser = await DashboardClient.signedIn(h.stack.baseUrl, h.workspace.owner.email, h.workspace.owner.password);
    const firstTab = browser.csrf!;
    expect((await browser.call('GET', '/overview?window=1h', { csrf: firstTab })).status).toBe(200);
    // Another tab signs in: the browser's one cookie now names a new session.
    expect((await browser.signIn(h.workspace.owner.email, h.workspace.owner.password)).status).toBe(200);
    expectApiError(await browser.call('GET', '/overview?window=1h', { csrf: firstTab }), 401, { code: 'session_changed', type: 'authentication_error' });
    expect((await browser.call('GET', '/overview?window=1h', { csrf: browser.csrf! })).status).toBe(200);
    // A script that never held a token reads as before.
    expect((await browser.call('GET', '/overview?window=1h')).status).toBe(200);
  });

  it('sends the Content-Security-Policy on the page and on unknown paths under it', async () => {
    for (const path of ['/dashboard/', '/dashboard/requests/req_x']) {
      const res = await fetch(`${h.stack.baseUrl}${path}`);
      expect(res.headers.get('content-security-policy')).toBe(CSP);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      // The page is there once the web app is built (Vite); before that the route answers 404 in JSON.
      const built = existsSync(resolve(__dirname, '../../libs/dashboard/dist/web/index.html'));
      expect(res.status).toBe(built ? 200 : 404);
      if (built) expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    }
    const redirect = await fetch(`${h.stack.baseUrl}/dashboard`, { redirect: 'manual' });
    expect(redirect.status).toBe(301);
    expect(redirect.headers.get('location')).toBe('/dashboard/');
  });
});

describe('roles, secrets and keys', () => {
  let member: DashboardClient;
  let admin: DashboardClient;

  beforeAll(async () => {
    const m = await owner.call('POST', '/members', { json: { email: 'member@test.test', role: 'member' } });
    const a = await owner.call('POST', '/members', { json: { email: 'admin@test.test', role: 'admin' } });
    expect([m.status, a.status]).toEqual([201, 201]);
    member = await DashboardClient.signedIn(h.stack.baseUrl, m.json.email, m.json.password);
    admin = await DashboardClient.signedIn(h.stack.baseUrl, a.json.email, a.json.password);
  });

  it('refuses a rotation a member forges with 403, and tells the page which buttons to show', async () => {
    const page = await member.call('GET', '/keys');
    expect(page.json.signing).toMatchObject({ can_rotate: false, can_end_overlap: false, previous_expires_at: null });
    expectApiError(await member.call('POST', '/secrets/rotate'), 403, { code: 'permission_denied', type: 'permission_error' });
    expectApiError(await member.call('POST', '/keys'), 403, { code: 'permission_denied' });
    expectApiError(await member.call('POST', '/members', { json: { email: 'x@test.test', role: 'owner' } }), 403, { code: 'permission_denied' });
    expect((await member.call('POST', '/secrets/reveal')).json.current).toBe(h.workspace.signingSecret);
  });

  it('lets an admin rotate (both secrets shown, with the end of the overlap) and only the owner end the overlap', async () => {
    const before = Math.floor(Date.now() / 1000);
    const rotated = await admin.call('POST', '/secrets/rotate');
    expect(rotated.status).toBe(200);
    expect(rotated.json).toEqual({ current: expect.stringMatching(/^whsec_/), previous: h.workspace.signingSecret, previous_expires_at: expect.any(Number) });
    expect(rotated.json.current).not.toBe(h.workspace.signingSecret);
    expect(rotated.json.previous_expires_at).toBeGreaterThanOrEqual(before + 86_400);
    expect((await owner.call('GET', '/keys')).json.signing).toMatchObject({
      previous_expires_at: rotated.json.previous_expires_at,
      can_rotate: true,
      can_end_overlap: true,
    });
    expect((await admin.call('GET', '/keys')).json.signing).toMatchObject({ can_rotate: true, can_end_overlap: false });
    expectApiError(await admin.call('POST', '/secrets/end-overlap'), 403, { code: 'permission_denied' });
    const ownerRotated = await owner.call('POST', '/secrets/rotate');
    expect(ownerRotated.json.previous).toBe(rotated.json.current);
    const ended = await owner.call('POST', '/secrets/end-overlap');
    expect(ended.json).toEqual({ current: ownerRotated.json.current, previous: null, previous_expires_at: null });
    expect(await h.stack.workspaces.activeSecrets(h.workspace.workspaceId)).toEqual([ownerRotated.json.current]);
  });

  it('lets owners and admins turn on asymmetric signing (twice keeps the key) and rotate its key pair; a member sees the keys and gets 403', async () => {
    expect((await member.call('GET', '/keys')).json.asymmetric).toEqual({ public_keys: [], can_manage: false });
    expect((await admin.call('GET', '/keys')).json.asymmetric).toEqual({ public_keys: [], can_manage: true });
    expectApiError(await member.call('POST', '/signing-keys/enable'), 403, { code: 'permission_denied' });
    expectApiError(await admin.call('POST', '/signing-keys/rotate'), 409, { code: 'asymmetric_signing_off', type: 'conflict_error' });

    const enabled = await admin.call('POST', '/signing-keys/enable');
    expect(enabled.status).toBe(200);
    expect(enabled.json).toEqual({
      public_keys: [{ public_key: expect.stringMatching(/^whpk_[A-Za-z0-9+/]{43}=$/), created_at: expect.any(Number), expires_at: null }],
      can_manage: true,
    });
    expect((await owner.call('POST', '/signing-keys/enable')).json.public_keys).toEqual(enabled.json.public_keys);
    // What the page shows is what receivers fetch.
    const served = (await (await fetch(`${h.stack.baseUrl}/v1/webhook-keys/${h.workspace.workspaceId}`)).json()) as { data: { public_key: string }[] };
    expect(served.data.map((k) => k.public_key)).toEqual([enabled.json.public_keys[0].public_key]);
    expect((await member.call('GET', '/keys')).json.asymmetric).toEqual({ public_keys: enabled.json.public_keys, can_manage: false });

    expectApiError(await member.call('POST', '/signing-keys/rotate'), 403, { code: 'permission_denied' });
    const rotated = await owner.call('POST', '/signing-keys/rotate');
    expect(rotated.json.public_keys).toHaveLength(2);
    expect(rotated.json.public_keys[1]).toEqual({ ...enabled.json.public_keys[0], expires_at: expect.any(Number) });
    expect(rotated.json.public_keys[1].expires_at).toBeGreaterThanOrEqual(Math.floor(Date.now() / 1000) + 86_000);
    expect(rotated.json.public_keys[0]).toMatchObject({ expires_at: null });
  });

  it('creates a key shown once, lists it with its last use, and revokes it so that it gets 401', async () => {
    const created = await admin.call('POST', '/keys');
    expect(created.status).toBe(201);
    expect(created.json).toEqual({
      id: expect.stringMatching(/^key_/),
      key: expect.stringMatching(/^sk_/),
      prefix: `${created.json.key.slice(0, 7)}…`,
      created_at: expect.any(Number),
      last_used_at: null,
    });
    let listed = await owner.call('GET', '/keys');
    expect(listed.json.api_keys).toContainEqual({ id: created.json.id, prefix: created.json.prefix, created_at: created.json.created_at, last_used_at: null });
    expect(listed.text).not.toContain(created.json.key);
    const call = api(h.stack, created.json.key);
    expect((await call('/v1/models')).status).toBe(200);
    listed = await owner.call('GET', '/keys');
    const used = listed.json.api_keys.find((k: { id: string }) => k.id === created.json.id);
    expect(used.last_used_at).toBeGreaterThanOrEqual(created.json.created_at);
    expect((await owner.call('DELETE', `/keys/${created.json.id}`)).status).toBe(204);
    expectApiError(await call('/v1/models'), 401, { code: 'invalid_api_key' });
    expect((await owner.call('GET', '/keys')).json.api_keys.map((k: { id: string }) => k.id)).not.toContain(created.json.id);
  });

  it('ends a member’s sessions when their role changes, when they are removed, and for good when the same e-mail is added again', async () => {
    const first = await owner.call('POST', '/members', { json: { email: 'ops@test.test', role: 'member' } });
    const ops = await DashboardClient.signedIn(h.stack.baseUrl, 'ops@test.test', first.json.password);
    // A new role: the session opened under the old one is over.
    await owner.call('PATCH', '/members/ops@test.test', { json: { role: 'admin' } });
    expectSignedOut(await ops.call('GET', '/session'));
    const asAdmin = await DashboardClient.signedIn(h.stack.baseUrl, 'ops@test.test', first.json.password);
    expect((await asAdmin.call('GET', '/session')).json.member.role).toBe('admin');
    // Removed: the session is over; refused requests do not keep it alive.
    await owner.call('DELETE', '/members/ops@test.test');
    for (let i = 0; i < 3; i++) expectSignedOut(await asAdmin.call('GET', '/session'));
    // Added again with another password and role: the old cookie stays dead.
    const second = await owner.call('POST', '/members', { json: { email: 'ops@test.test', role: 'owner' } });
    expectSignedOut(await asAdmin.call('GET', '/session'));
    expectApiError(await asAdmin.call('POST', '/secrets/reveal'), 401, { code: 'not_signed_in' });
    expect(
      (await DashboardClient.signedIn(h.stack.baseUrl, 'ops@test.test', second.json.password).then((c) => c.call('GET', '/session'))).json.member.role,
    ).toBe('owner');
    await owner.call('DELETE', '/members/ops@test.test');
  });

  it('adds, re-roles and removes members, and never the last owner', async () => {
    const added = await owner.call('POST', '/members', { json: { email: 'Temp@Test.test', role: 'member' } });
    expect(added.json).toEqual({ email: 'temp@test.test', role: 'member', password: expect.any(String) });
    expectApiError(await owner.call('POST', '/members', { json: { email: 'temp@test.test', role: 'admin' } }), 409, { code: 'member_exists' });
    expect((await owner.call('PATCH', '/members/temp@test.test', { json: { role: 'admin' } })).json).toEqual({ email: 'temp@test.test', role: 'admin' });
    expect((await owner.call('GET', '/members')).json).toContainEqual({ email: 'temp@test.test', role: 'admin' });
    expectApiError(await owner.call('PATCH', `/members/${h.workspace.owner.email}`, { json: { role: 'admin' } }), 409, { code: 'last_owner' });
    expectApiError(await owner.call('DELETE', `/members/${h.workspace.owner.email}`), 409, { code: 'last_owner' });
    expect((await owner.call('DELETE', '/members/temp@test.test')).status).toBe(204);
    expectApiError(await owner.call('DELETE', '/members/temp@test.test'), 404);
  });

  it('refuses an e-mail that is not a string, or holds a control or format character, with 400 on email', async () => {
    const before = (await owner.call('GET', '/members')).json;
    for (const email of [
      { toString: 1 },
      { toString: null, valueOf: null },
      [{ toString: 1 }],
      ['a@test.test'],
      5,
      null,
      'a\u0000b@test.test',
      'a@te\u0007st.test',
      // Invisible format characters: a right-to-left override shows another address, a zero-width space none.
      'Robert\u202Eevil@test.test',
      'a\u200Bb@test.test',
    ]) {
      const res = await owner.call('POST', '/members', { json: { email, role: 'member' } });
      expectApiError(res, 400, { type: 'invalid_request_error', param: 'email', code: 'invalid_value' });
    }
    expect((await owner.call('GET', '/members')).json).toEqual(before);
  });

  it('signs a member out even once they have made all the changes a minute allows', async () => {
    const added = await owner.call('POST', '/members', { json: { email: 'busy@test.test', role: 'member' } });
    const busy = await DashboardClient.signedIn(h.stack.baseUrl, 'busy@test.test', added.json.password);
    let limited;
    for (let i = 0; i < 100 && !limited; i++) {
      const res = await busy.call('POST', '/members', { json: { email: `x${i}@test.test`, role: 'member' } });
      if (res.status === 429) limited = res;
    }
    expectApiError(limited!, 429, { code: 'rate_limit_exceeded' });
    const stolen = busy.cookie;
    expect((await busy.call('DELETE', '/session')).status).toBe(204);
    busy.cookie = stolen;
    expectSignedOut(await busy.call('GET', '/session'));
    await owner.call('DELETE', '/members/busy@test.test');
  });
});

describe('requests, retry, usage and test callbacks', () => {
  let failedImage: string;
  let deliveredImage: string;
  let video: string;

  beforeAll(async () => {
    failedImage = await h.jobs.image(h.receiver.url('/fails'), 'first');
    video = await h.jobs.video(h.receiver.url('/ok'));
    await h.messageIdOf(video);
    deliveredImage = await h.jobs.image(h.receiver.url('/ok'), 'third');
    await h.settled(await h.messageIdOf(deliveredImage), ['delivered']);
    await h.settled(await h.messageIdOf(failedImage), ['failed']);
    await h.settled(await h.messageIdOf(video), ['delivered']);
  });

  it('lists every request newest first, pages with after, filters by kind and callback state, and finds by id', async () => {
    const all = await owner.call('GET', '/requests');
    expect(all.json.data.map((r: { id: string }) => r.id)).toEqual([deliveredImage, video, failedImage]);
    expect(all.json.has_more).toBe(false);
    expect(all.json.data[2]).toMatchObject({
      kind: 'image',
      model: 'pixel-1',
      status: 'completed',
      prompt: 'first',
      callback_url: h.receiver.url('/fails'),
      callback: { object: 'callback', status: 'failed', attempt_count: 6, job_id: failedImage },
    });
    const first = await owner.call('GET', '/requests?limit=1');
    expect([first.json.data.map((r: { id: string }) => r.id), first.json.has_more]).toEqual([[deliveredImage], true]);
    const second = await owner.call('GET', `/requests?limit=1&after=${deliveredImage}`);
    expect([second.json.data.map((r: { id: string }) => r.id), second.json.has_more]).toEqual([[video], true]);
    const third = await owner.call('GET', `/requests?limit=1&after=${video}`);
    expect([third.json.data.map((r: { id: string }) => r.id), third.json.has_more]).toEqual([[failedImage], false]);
    expect((await owner.call('GET', '/requests?kind=video')).json.data.map((r: { id: string }) => r.id)).toEqual([video]);
    expect((await owner.call('GET', '/requests?callback_status=failed')).json.data.map((r: { id: string }) => r.id)).toEqual([failedImage]);
    expect((await owner.call('GET', '/requests?callback_status=delivered&kind=image')).json.data.map((r: { id: string }) => r.id)).toEqual([deliveredImage]);
    const byMsg = await owner.call('GET', `/requests?q=${await h.messageIdOf(video)}`);
    expect(byMsg.json.data.map((r: { id: string }) => r.id)).toEqual([video]);
    expect((await owner.call('GET', `/requests?q=${failedImage}`)).json.data).toHaveLength(1);
    expect((await owner.call('GET', '/requests?q=req_nothing')).json.data).toEqual([]);
    expectApiError(await owner.call('GET', '/requests?kind=audio'), 400, { param: 'kind' });
  });

  it('shows a request as the API does, with every attempt as text, and retries its failed callback', async () => {
    const detail = await owner.call('GET', `/requests/${failedImage}`);
    expect(detail.json.job).toEqual(await h.jobs.get(failedImage).then((j) => ({ ...j, data: expect.any(Array), url_expires_at: expect.any(Number) })));
    // Its one callback, to its own callback_url (the workspace has no webhook endpoint).
    expect(detail.json.callbacks).toHaveLength(1);
    const [{ callback, endpoint }] = detail.json.callbacks;
    expect([callback.endpoint_id, endpoint]).toEqual([null, null]);
    expect(callback.attempts).toHaveLength(6);
    expect(callback.attempts[0]).toMatchObject({
      number: 1,
      trigger: 'scheduled',
      status_code: 500,
      error: 'http_error',
      response_excerpt: '<script>alert(1)</script>',
    });
    expect(detail.headers.get('content-type')).toMatch(/^application\/json/);
    const retry = await owner.call('POST', `/callbacks/${callback.id}/retry`);
    expect(retry.status).toBe(202);
    expect(retry.json).toMatchObject({ id: callback.id, object: 'callback' });
    const after = await eventually(
      async () => {
        const d = await owner.call('GET', `/requests/${failedImage}`);
        return d.json.callbacks[0].callback.attempts.length === 7 ? d.json.callbacks[0].callback : undefined;
      },
      20_000,
      'the manual attempt',
    );
    expect(after.attempts[6]).toMatchObject({ number: 7, trigger: 'manual', status_code: 500 });
  });

  it('answers 404 for another workspace’s request, callback and key ids', async () => {
    const other = await h.stack.createWorkspace('other');
    const stranger = await DashboardClient.signedIn(h.stack.baseUrl, other.owner.email, other.owner.password);
    const msg = await h.messageIdOf(failedImage);
    expectApiError(await stranger.call('GET', `/requests/${failedImage}`), 404, { type: 'not_found_error' });
    expectApiError(await stranger.call('POST', `/callbacks/${msg}/retry`), 404, { type: 'not_found_error' });
    expect((await stranger.call('GET', `/requests?q=${msg}`)).json.data).toEqual([]);
    // Another workspace's request as a cursor is answered as one that does not exist.
    const strangersCursor = await stranger.call('GET', `/requests?after=${video}`);
    const missingCursor = await stranger.call('GET', '/requests?after=video_doesnotexist');
    expectApiError(strangersCursor, 400, { param: 'after', code: 'invalid_value' });
    expect(strangersCursor.json).toEqual(missingCursor.json);
    const [key] = (await owner.call('GET', '/keys')).json.api_keys;
    expectApiError(await stranger.call('DELETE', `/keys/${key.id}`), 404, { type: 'not_found_error' });
    expect((await stranger.call('GET', '/requests')).json.data).toEqual([]);
  });

  it('goes on after a request deleted while its page was shown, from where it was', async () => {
    const pager = await h.stack.createWorkspace('pager');
    const client = await DashboardClient.signedIn(h.stack.baseUrl, pager.owner.email, pager.owner.password);
    const made: string[] = [];
    for (const prompt of ['a red kite', 'a blue kite', 'a green kite']) {
      const res = await api(h.stack, pager.apiKey)('/v1/images/generations', { method: 'POST', json: { prompt, size: '256x256' } });
      expect(res.status).toBe(200);
      made.push(res.json.id);
    }
    const first = await client.call('GET', '/requests?limit=2');
    expect(first.json.data.map((row: { id: string }) => row.id)).toEqual([made[2], made[1]]);
    await h.stack.jobs.remove((await h.stack.jobs.get(made[1]!))!);
    const next = await client.call('GET', `/requests?limit=2&after=${made[1]}`);
    expect([next.status, next.json.data.map((row: { id: string }) => row.id), next.json.has_more]).toEqual([200, [made[0]], false]);
  });

  it('goes on after a request deleted while its page was shown, under a callback filter and in a search too', async () => {
    const pager = await h.stack.createWorkspace('callback-pager');
    const client = await DashboardClient.signedIn(h.stack.baseUrl, pager.owner.email, pager.owner.password);
    const call = api(h.stack, pager.apiKey);
    const ids = (res: { json: { data: { id: string }[] } }) => res.json.data.map((row) => row.id);
    const made: string[] = [];
    // One at a time, each delivered before the next: the filter lists callbacks newest first.
    for (const prompt of ['a red kite', 'a blue kite', 'a green kite']) {
      const res = await call('/v1/videos', { method: 'POST', json: { prompt, seconds: 1, size: '640x360', callback_url: h.receiver.url('/pager') } });
      expect(res.status).toBe(200);
      made.push(res.json.id);
      await eventually(
        async () => (ids(await client.call('GET', '/requests?callback_status=delivered')).length === made.length ? true : undefined),
        30_000,
        'the callback',
      );
    }
    const modes = ['callback_status=delivered', 'q=KITE'];
    for (const mode of modes) expect(ids(await client.call('GET', `/requests?${mode}&limit=2`))).toEqual([made[2], made[1]]);
    // Deleted through the API: the video and its callback go.
    const goneCallback = h.stack.keys.callback(await h.messageIdOf(made[1]!));
    expect(await h.stack.redis.exists(goneCallback)).toBe(1);
    expect((await call(`/v1/videos/${made[1]}`, { method: 'DELETE' })).status).toBe(200);
    expect(await h.stack.redis.exists(goneCallback)).toBe(0);
    for (const mode of modes) {
      const next = await client.call('GET', `/requests?${mode}&limit=2&after=${made[1]}`);
      expect([mode, next.status, ids(next), next.json.has_more]).toEqual([mode, 200, [made[0]], false]);
    }
    // To another workspace, these requests, deleted or not, are cursors that do not exist.
    const other = await h.stack.createWorkspace('callback-pager-other');
    const stranger = await DashboardClient.signedIn(h.stack.baseUrl, other.owner.email, other.owner.password);
    for (const mode of modes) {
      const missing = await stranger.call('GET', `/requests?${mode}&after=video_doesnotexist`);
      expectApiError(missing, 400, { param: 'after', code: 'invalid_value' });
      for (const id of [made[0], made[1]]) expect((await stranger.call('GET', `/requests?${mode}&after=${id}`)).json).toEqual(missing.json);
    }
  });

  it('shows the workspace its own callback destinations and how each is doing, never another workspace’s', async () => {
    const gate = new DestinationGate(h.stack.redis, h.stack.keys, destinationLimits(loadConfig(h.stack.env)));
    const now = Date.now();
    const seed = async (workspaceId: string, url: string, leases: number, signal?: DestinationSignal) => {
      const destination = destinationOf(url);
      for (let i = 0; i < leases; i++)
        await gate.acquire({ destination, workspaceId, leaseId: `${url}#${i}`, parkAs: `${url}#${i}.d1`, dueMs: now, nowMs: now });
      if (signal) await gate.release(destination, workspaceId, `${url}#0`, signal, now);
    };
    await seed(h.workspace.workspaceId, 'https://busy.example/hook', 101);
    await seed(h.workspace.workspaceId, 'https://pushy.example/hook', 1, { slow: false, fast: true, throttleMs: 60_000, delivered: false });
    await seed(h.workspace.workspaceId, 'https://sluggish.example/hook', 1, { slow: true, fast: false, throttleMs: 0, delivered: false });
    const other = await h.stack.createWorkspace('elsewhere');
    await seed(other.workspaceId, 'https://theirs.example/hook', 1);
    // Another workspace at the same host as this one's busy receiver: none of its traffic shows.
    await seed(other.workspaceId, 'https://busy.example/other-path', 5, { slow: false, fast: true, throttleMs: 0, delivered: true });

    const { json } = await owner.call('GET', '/destinations');
    const byOrigin = Object.fromEntries(json.data.map((d: { origin: string }) => [d.origin, d]));
    // One workspace alone holds the cap less its headroom (100 - 10); the rest of its attempts wait.
    expect(byOrigin['https://busy.example:443']).toEqual({
      origin: 'https://busy.example:443',
      state: 'saturated',
      held_back_because: 'host_busy',
      limit: 90,
      in_flight: 90,
      waiting: 11,
      slow_until: null,
      host_slow_until: null,
      throttled_until: null,
      health: 'unknown',
      failures_in_row: 0,
      last_failure_at: null,
      last_delivered_at: null,
    });
    // The host pushed back: half the cap (50) less its headroom, for everyone there; and it is failing.
    expect(byOrigin['https://pushy.example:443']).toMatchObject({
      state: 'throttled',
      limit: 45,
      throttled_until: Math.floor((now + 60_000) / 1000),
      health: 'failing',
      failures_in_row: 1,
    });
    // Its own attempts timed out: its own slow lane (and the whole host's, as no one else's answered fast).
    expect(byOrigin['https://sluggish.example:443']).toMatchObject({
      state: 'slow',
      limit: 18,
      slow_until: expect.any(Number),
      host_slow_until: expect.any(Number),
    });
    // The workspace's real receiver, where its callbacks went: healthy.
    expect(byOrigin[destinationOf(h.receiver.url('/')).origin]).toMatchObject({ state: 'ok' });
    expect(byOrigin['https://theirs.example:443']).toBeUndefined();
    const stranger = await DashboardClient.signedIn(h.stack.baseUrl, other.owner.email, other.owner.password);
    const theirs = (await stranger.call('GET', '/destinations')).json.data;
    expect(theirs.map((d: { origin: string }) => d.origin).sort()).toEqual(['https://busy.example:443', 'https://theirs.example:443']);
    // The same host, as the other workspace sees it: its own four attempts, sent as due, accepted.
    expect(theirs.find((d: { origin: string }) => d.origin === 'https://busy.example:443')).toMatchObject({
      state: 'ok',
      held_back_because: null,
      in_flight: 4,
      waiting: 0,
      health: 'ok',
    });
  });

  it('sums usage per day exactly as the ledger does', async () => {
    const usage = await owner.call('GET', '/usage?days=7');
    const ledger = await h.stack.jobs.ledger(h.workspace.workspaceId);
    const total = ledger.reduce((sum, e) => sum + Math.round(e.amount * 1e6), 0) / 1e6;
    expect(usage.json.currency).toBe('usd');
    expect(usage.json.total).toBe(total);
    expect(usage.json.entries.map((e: { job_id: string }) => e.job_id).sort()).toEqual(ledger.map((e) => e.job_id).sort());
    expect(usage.json.days).toHaveLength(7);
    // Each day as the ledger dates its entries (UTC): one day, or two when the jobs straddled midnight.
    const perDay = new Map<string, { date: string; amount: number; count: number }>();
    for (const e of ledger) {
      const date = new Date(e.created_ms).toISOString().slice(0, 10);
      const day = perDay.get(date) ?? { date, amount: 0, count: 0 };
      day.amount += Math.round(e.amount * 1e6);
      day.count += 1;
      perDay.set(date, day);
    }
    const expected = [...perDay.values()].map((d) => ({ ...d, amount: d.amount / 1e6 }));
    expect(usage.json.days.filter((d: { date: string }) => perDay.has(d.date))).toEqual(expected);
  });

  it('sends a signed test callback through the dispatcher and shows the answer; refuses a private URL with 400', async () => {
    h.receiver.script('/test-hook', () => ({ status: 204 }));
    const res = await owner.call('POST', '/test-callback', { json: { url: h.receiver.url('/test-hook') } });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({
      webhook_id: expect.stringMatching(/^msg_/),
      delivered: true,
      status_code: 204,
      error: null,
      duration_ms: expect.any(Number),
      address: '127.0.0.1',
      response_excerpt: '',
    });
    const [request] = h.receiver.requestsTo('/test-hook');
    const secret = (await owner.call('POST', '/secrets/reveal')).json.current;
    const payload = new Webhook(secret).verify(request.body, request.headers) as { type: string; data: { object: string } };
    expect(payload).toMatchObject({ type: 'image.completed', data: { object: 'image.generation', callback_url: h.receiver.url('/test-hook') } });
    expect(request.headers['webhook-id']).toBe(res.json.webhook_id);
    // A test is not a delivery: no callback's attempt log grows.
    expect((await h.callbacks.attempts(await h.messageIdOf(deliveredImage))).map((a) => a.trigger)).not.toContain('test');
    expectApiError(await owner.call('POST', '/test-callback', { json: { url: 'https://10.1.2.3/hook' } }), 400, { code: 'invalid_callback_url', param: 'url' });
    expectApiError(await owner.call('POST', '/test-callback', { json: { url: 'ftp://example.com/' } }), 400, { code: 'invalid_callback_url' });
  });
});
