// GET /v1/audit-events on a real gateway (in-process) and Redis: a change made on the dashboard is
// listed with the member who made it, the filters and the cursor work, bad input is a 400 in the
// API's error shape, and one workspace never sees another's events.
import { expectApiError } from '../support/http';
import { api, TestStack, type TestWorkspace } from '../support/stack';
import { DashboardClient } from '../dashboard/support/api-client';

let stack: TestStack;
let ws: TestWorkspace;
let call: ReturnType<typeof api>;

beforeAll(async () => {
  stack = await TestStack.start(['api-gateway'], {}, { inProcess: true });
  ws = await stack.createWorkspace('audit');
  call = api(stack, ws.apiKey);
});

afterAll(async () => {
  await stack?.stop();
});

describe('GET /v1/audit-events', () => {
  it('lists the workspace’s changes newest first, each with who made it and no secret', async () => {
    const owner = await DashboardClient.signedIn(stack.baseUrl, ws.owner.email, ws.owner.password);
    const created = await owner.call('POST', '/keys');
    expect(created.status).toBe(201);
    const member = await owner.call('POST', '/members', { json: { email: 'new@audit.test', role: 'member' } });
    expect(member.status).toBe(201);

    const res = await call('/v1/audit-events');
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ object: 'list', has_more: false });
    expect(res.json.data).toEqual([
      {
        object: 'audit_event',
        id: expect.stringMatching(/^aud_/),
        action: 'member.added',
        actor: { type: 'member', email: ws.owner.email },
        target: { type: 'member', id: 'new@audit.test', role: 'member' },
        created_at: expect.any(Number),
      },
      {
        object: 'audit_event',
        id: expect.stringMatching(/^aud_/),
        action: 'api_key.created',
        actor: { type: 'member', email: ws.owner.email },
        target: { type: 'api_key', id: created.json.id, prefix: expect.any(String) },
        created_at: expect.any(Number),
      },
      expect.objectContaining({
        action: 'workspace.created',
        actor: { type: 'operator' },
        target: expect.objectContaining({ type: 'workspace', id: ws.workspaceId }),
      }),
    ]);
    const text = JSON.stringify(res.json);
    for (const secret of [ws.apiKey, ws.signingSecret, ws.owner.password, created.json.key, member.json.password]) expect(text).not.toContain(secret);
  });

  it('pages with after and limit, and filters by action', async () => {
    const first = await call('/v1/audit-events?limit=1');
    expect([first.json.data.length, first.json.has_more]).toEqual([1, true]);
    const next = await call(`/v1/audit-events?limit=1&after=${first.json.last_id}`);
    expect(next.json.data[0].action).toBe('api_key.created');
    const keysOnly = await call('/v1/audit-events?action=api_key.created,workspace.created');
    expect(keysOnly.json.data.map((e: { action: string }) => e.action)).toEqual(['api_key.created', 'workspace.created']);
  });

  it('answers bad input with a 400 in the error shape', async () => {
    expectApiError(await call('/v1/audit-events?action=api_key.stolen'), 400, { type: 'invalid_request_error', param: 'action' });
    expectApiError(await call('/v1/audit-events?after=aud_doesnotexist'), 400, { param: 'after' });
    expectApiError(await call('/v1/audit-events?limit=0'), 400, { param: 'limit' });
    expectApiError(await call('/v1/audit-events?limit=101'), 400, { param: 'limit' });
  });

  it('needs an API key, and shows a workspace only its own events', async () => {
    expectApiError(await api(stack, 'sk_wrong')('/v1/audit-events'), 401);
    const other = await stack.createWorkspace('audit-other');
    const theirs = await api(stack, other.apiKey)('/v1/audit-events');
    expect(theirs.json.data.map((e: { action: string }) => e.action)).toEqual(['workspace.created']);
    expect(JSON.stringify(theirs.json)).not.toContain(ws.workspaceId);
    // Another workspace's cursor names nothing of this list.
    const mine = await call('/v1/audit-events?limit=1');
    expectApiError(await api(stack, other.apiKey)(`/v1/audit-events?after=${mine.json.data[0].id}`), 400, { param: 'after' });
  });
});
