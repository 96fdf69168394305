import { execFile } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { VideoJob } from '@media/domain';
import { LimitRepository } from '@media/jobs';
import { adminJson } from '../admin/support/admin-cli';
import { expectApiError } from '../support/http';
import { api, TestStack, type TestWorkspace } from '../support/stack';

/**
 * Per-workspace limits (design section 2, "Rate limits"), counted in Redis. The stack has no
 * generator, so accepted jobs stay waiting and the waiting-jobs cap is reached deterministically.
 */
const DEFAULTS = { RATE_LIMIT_CREATE_PER_MINUTE: '3', RATE_LIMIT_READ_PER_MINUTE: '4', MAX_WAITING_JOBS_PER_WORKSPACE: '2' };

let stack: TestStack;

beforeAll(async () => {
  stack = await TestStack.start(['api-gateway'], DEFAULTS, { inProcess: true });
});

afterAll(async () => {
  await stack?.stop();
});

const run = promisify(execFile);
/** The admin CLI's settings: this stack's Redis and prefix, and the same limits as the gateway. */
const adminEnv = () => ({ PATH: process.env.PATH, REDIS_URL: stack.redisUrl, KEY_PREFIX: stack.prefix, ...DEFAULTS });
/** The built admin CLI, run as a process: the binary's own wiring, exit code and output. */
const admin = async (...args: string[]) => {
  const { stdout } = await run(process.execPath, [join(__dirname, '../../tools/admin/dist/main.js'), ...args], { env: adminEnv() });
  return JSON.parse(stdout);
};
/** The same CLI's main, called in this process (test/admin/support/admin-cli.ts): the same output and exit code. */
const adminInProcess = (...args: string[]) => adminJson(args, adminEnv());

async function workspace(name: string): Promise<{ ws: TestWorkspace; call: ReturnType<typeof api> }> {
  const ws = await stack.createWorkspace(name);
  return { ws, call: api(stack, ws.apiKey) };
}

const video = { prompt: 'limits', seconds: 1, size: '640x360' };
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');
const limitHeaders = (res: { headers: Headers }) => ({
  limit: res.headers.get('x-ratelimit-limit-requests'),
  remaining: res.headers.get('x-ratelimit-remaining-requests'),
  reset: res.headers.get('x-ratelimit-reset-requests'),
});
const RESET = /^(\d{1,2}s|1m0s|\d{1,3}ms)$/;

describe('creation calls', () => {
  it('carry the rate-limit headers on every answer, errors included, and answer 429 with Retry-After past the limit', async () => {
    const { call } = await workspace('create-limit');
    const answers = [
      await call('/v1/videos', { method: 'POST', json: video }),
      await call('/v1/images/generations', { method: 'POST', json: {} }),
      await call('/v1/images/edits', { method: 'POST', body: 'x', headers: { 'content-type': 'text/plain' } }),
    ];
    expect(answers.map((r) => r.status)).toEqual([200, 400, 415]);
    expect(answers.map((r) => limitHeaders(r).remaining)).toEqual(['2', '1', '0']);
    for (const res of answers) {
      expect(limitHeaders(res)).toMatchObject({ limit: '3', reset: expect.stringMatching(RESET) });
    }

    const over = await call('/v1/videos', { method: 'POST', json: video });
    expectApiError(over, 429, { type: 'rate_limit_error', code: 'rate_limit_exceeded', param: null });
    expect(limitHeaders(over)).toMatchObject({ limit: '3', remaining: '0', reset: expect.stringMatching(RESET) });
    const retryAfter = Number(over.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(over.json.error.message).toMatch(/3 per minute/);

    // Reads are a bucket of their own, and carry their own headers.
    const read = await call('/v1/videos');
    expect([read.status, limitHeaders(read).limit, limitHeaders(read).remaining]).toEqual([200, '4', '3']);
  });

  it('leave other workspaces alone', async () => {
    const busy = await workspace('busy');
    const quiet = await workspace('quiet');
    for (let i = 0; i < 4; i++) await busy.call('/v1/images/generations', { method: 'POST', json: {} });
    expect((await busy.call('/v1/images/generations', { method: 'POST', json: {} })).status).toBe(429);
    const res = await quiet.call('/v1/videos', { method: 'POST', json: video });
    expect([res.status, limitHeaders(res).remaining]).toEqual([200, '2']);
  });
});

describe('read calls', () => {
  it('are limited per workspace on every read route, apart from creation calls', async () => {
    const { call } = await workspace('read-limit');
    const created = await call('/v1/videos', { method: 'POST', json: video });
    const reads = ['/v1/videos', `/v1/videos/${created.json.id}`, `/v1/videos/${created.json.id}/content`, '/v1/images/req_missing'];
    const answers = [];
    for (const path of reads) answers.push(await call(path));
    expect(answers.map((r) => r.status)).toEqual([200, 200, 409, 404]);
    expect(answers.map((r) => limitHeaders(r).remaining)).toEqual(['3', '2', '1', '0']);
    const over = await call('/v1/videos');
    expectApiError(over, 429, { type: 'rate_limit_error', code: 'rate_limit_exceeded' });
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // The model catalog is not a workspace read.
    expect((await call('/v1/models')).status).toBe(200);
    expect((await call('/v1/videos', { method: 'POST', json: video })).status).toBe(200);
  });
});

describe('admin set-limits', () => {
  it('overrides one workspace’s limits at once, prints the limits in force, and goes back to the defaults', async () => {
    const { ws, call } = await workspace('override');
    const lowered = await admin('set-limits', '--workspace', ws.workspaceId, '--create-per-minute', '1', '--read-per-minute', '10');
    expect(lowered).toEqual({ workspace_id: ws.workspaceId, limits: { create_per_minute: 1, read_per_minute: 10, max_waiting_jobs: 2 } });

    const first = await call('/v1/videos', { method: 'POST', json: video });
    expect([first.status, limitHeaders(first).limit, limitHeaders(first).remaining]).toEqual([200, '1', '0']);
    expect((await call('/v1/videos', { method: 'POST', json: video })).status).toBe(429);
    expect(limitHeaders(await call('/v1/videos')).limit).toBe('10');

    // Raised: the calls already made in this window still count.
    await adminInProcess('set-limits', '--workspace', ws.workspaceId, '--create-per-minute', '5');
    const raised = await call('/v1/images/generations', { method: 'POST', json: {} });
    expect([raised.status, limitHeaders(raised).limit, limitHeaders(raised).remaining]).toEqual([400, '5', '2']);

    const reset = await adminInProcess('set-limits', '--workspace', ws.workspaceId, '--create-per-minute', 'default', '--read-per-minute', 'default');
    expect(reset.limits).toEqual({ create_per_minute: 3, read_per_minute: 4, max_waiting_jobs: 2 });
    expect(limitHeaders(await call('/v1/videos')).limit).toBe('4');
  });

  it('refuses bad values and unknown workspaces with a usage error', async () => {
    const { ws } = await workspace('bad-flags');
    // The built CLI refuses with exit code 2 and the reason on stderr; the same main in this process refuses the rest.
    await expect(admin('set-limits', '--workspace', ws.workspaceId, '--create-per-minute', '0')).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringContaining('--create-per-minute must be a positive integer'),
    });
    for (const value of ['0', '-1', '1.5', 'lots', '']) {
      await expect(adminInProcess('set-limits', '--workspace', ws.workspaceId, '--create-per-minute', value)).rejects.toMatchObject({
        code: 2,
        stderr: expect.stringContaining('--create-per-minute must be a positive integer'),
      });
    }
    await expect(adminInProcess('set-limits', '--workspace', 'ws_missing', '--read-per-minute', '5')).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringContaining('No workspace ws_missing.'),
    });
  });
});

describe('waiting jobs', () => {
  it('answers 429 too_many_pending_jobs at the cap, counts replays once, and frees a place when a job finishes', async () => {
    const { ws, call } = await workspace('waiting');
    await adminInProcess('set-limits', '--workspace', ws.workspaceId, '--create-per-minute', '100');
    const headers = { 'idempotency-key': 'waiting-1' };
    const first = await call('/v1/videos', { method: 'POST', json: video, headers });
    const second = await call('/v1/images/generations', {
      method: 'POST',
      json: { prompt: 'waits', size: '256x256', callback_url: 'https://93.184.215.14/hook' },
    });
    expect([first.status, second.status]).toEqual([200, 202]);

    const full = await call('/v1/videos', { method: 'POST', json: video });
    expectApiError(full, 429, { type: 'rate_limit_error', code: 'too_many_pending_jobs', param: null });
    expect(full.json.error.message).toMatch(/2 jobs waiting.*limit is 2/);
    expect(limitHeaders(full).limit).toBe('100');
    // A repeated request is the job already counted, not a new one.
    const replay = await call('/v1/videos', { method: 'POST', json: video, headers });
    expect([replay.status, replay.json.id, replay.headers.get('idempotent-replayed')]).toEqual([200, first.json.id, 'true']);

    await adminInProcess('set-limits', '--workspace', ws.workspaceId, '--max-waiting-jobs', '3');
    expect((await call('/v1/videos', { method: 'POST', json: video })).status).toBe(200);
    expect((await call('/v1/videos', { method: 'POST', json: video })).status).toBe(429);
    expect(await stack.jobs.unfinishedCount(ws.workspaceId)).toBe(3);

    // What the generator does when a job ends; twice is the same as once.
    const limits = new LimitRepository(stack.redis, stack.keys, { create_per_minute: 3, read_per_minute: 4, max_waiting_jobs: 2 });
    await limits.onJobFinished(ws.workspaceId, first.json.id);
    await limits.onJobFinished(ws.workspaceId, first.json.id);
    expect(await stack.jobs.unfinishedCount(ws.workspaceId)).toBe(2);
    expect((await call('/v1/videos', { method: 'POST', json: video })).status).toBe(200);
    expect((await call('/v1/videos', { method: 'POST', json: video })).status).toBe(429);

    // Another workspace at its own cap of 2 is not affected.
    const other = await workspace('waiting-other');
    expect((await other.call('/v1/videos', { method: 'POST', json: video })).status).toBe(200);
  });

  it('holds no place for a refused call, nor for a job whose uploads could not be stored', async () => {
    const { ws, call } = await workspace('refused');
    await adminInProcess('set-limits', '--workspace', ws.workspaceId, '--create-per-minute', '100');
    await call('/v1/videos', { method: 'POST', json: { ...video, callback_url: 'https://127.0.0.1/hook' } });
    await call('/v1/images/edits', { method: 'POST', json: { prompt: 'x', image: 'data:image/png;base64,AAAA' } });
    expect(await stack.jobs.unfinishedCount(ws.workspaceId)).toBe(0);

    // A file where the workspace's media directory belongs: the upload fails after the place was taken.
    await writeFile(join(stack.mediaDir, ws.workspaceId), 'in the way');
    const edit = await call('/v1/images/edits', { method: 'POST', json: { prompt: 'x', image: `data:image/png;base64,${PNG.toString('base64')}` } });
    expect(edit.status).toBe(500);
    expect(await stack.jobs.unfinishedCount(ws.workspaceId)).toBe(0);
    expect(await stack.jobs.get(edit.headers.get('x-request-id')!)).toBeUndefined();
    await rm(join(stack.mediaDir, ws.workspaceId));

    expect((await call('/v1/videos', { method: 'POST', json: video })).status).toBe(200);
    expect((await call('/v1/videos', { method: 'POST', json: video })).status).toBe(200);
  });
});

describe('remixes', () => {
  it('count as POST /v1/videos does: a creation call each, and a waiting job under the cap', async () => {
    const { ws, call } = await workspace('remix-limits');
    await adminInProcess('set-limits', '--workspace', ws.workspaceId, '--create-per-minute', '100');
    const created = await call('/v1/videos', { method: 'POST', json: video });
    // The generator's part: the source finishes, which frees its place.
    const source = (await stack.jobs.get(created.json.id)) as VideoJob;
    await stack.jobs.finish(
      { ...source, status: 'completed', progress: 100, finished_ms: Date.now(), cost: 0.1, output: `${ws.workspaceId}/${source.id}/video.mp4` },
      null,
    );

    const remix = (headers: Record<string, string> = {}) => call(`/v1/videos/${source.id}/remix`, { method: 'POST', json: { prompt: 'again' }, headers });
    const first = await remix({ 'idempotency-key': 'remix-1' });
    const second = await remix();
    expect([first.status, second.status]).toEqual([200, 200]);
    expect([limitHeaders(first).remaining, limitHeaders(second).remaining]).toEqual(['98', '97']);
    const full = await remix();
    expectApiError(full, 429, { type: 'rate_limit_error', code: 'too_many_pending_jobs', param: null });
    const replay = await remix({ 'idempotency-key': 'remix-1' });
    expect([replay.status, replay.json.id]).toEqual([200, first.json.id]);
    expect(await stack.jobs.unfinishedCount(ws.workspaceId)).toBe(2);

    // Five creation calls so far in this window.
    await adminInProcess('set-limits', '--workspace', ws.workspaceId, '--create-per-minute', '5', '--max-waiting-jobs', '10');
    const over = await remix();
    expectApiError(over, 429, { type: 'rate_limit_error', code: 'rate_limit_exceeded' });
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  });
});
