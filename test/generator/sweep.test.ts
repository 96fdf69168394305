import { Worker } from 'bullmq';
import { bullPrefix } from '@media/common';
import { api, eventually, TestStack } from '../support/stack';
import { bullQueue, chargesFor, finishedEvent } from './helpers';

// A job that BullMQ gave up on while no generator could record it (here: a foreign worker failed
// it) is found in the failed set when a generator starts, and ends `failed`, uncharged, announced.
let stack: TestStack;

beforeAll(async () => {
  stack = await TestStack.start(['api-gateway'], { GENERATION_ATTEMPTS: '1' });
});

afterAll(async () => {
  await stack?.stop();
});

it('ends a job left in the failed set as generation_failed when a generator starts', async () => {
  const ws = await stack.createWorkspace('sweep');
  const created = await api(stack, ws.apiKey)('/v1/videos', { method: 'POST', json: { prompt: 'lost', seconds: 1, size: '640x360' } });
  expect(created.status).toBe(200);
  const id: string = created.json.id;

  const connection = stack.redis.duplicate({ maxRetriesPerRequest: null });
  const saboteur = new Worker(
    'generation',
    async () => {
      throw new Error('worker vanished');
    },
    { connection, prefix: bullPrefix(stack.prefix, 'generation') },
  );
  const generation = bullQueue(stack, 'generation');
  const events = bullQueue(stack, 'job-events');
  try {
    await eventually(async () => ((await generation.getJobState(id)) === 'failed' ? true : undefined), 10_000, 'the job to fail in BullMQ');
    await saboteur.close();
    expect((await stack.jobs.get(id))?.status).toBe('queued');

    await stack.startService('generator');
    const job = await eventually(
      async () => {
        const record = await stack.jobs.get(id);
        return record?.status === 'failed' ? record : undefined;
      },
      10_000,
      'the generator to record the failure',
    );
    expect(job).toMatchObject({ cost: null, error: { code: 'generation_failed' } });
    expect(await chargesFor(stack, ws.workspaceId, id)).toEqual([]);
    expect((await finishedEvent(events, id)).data).toEqual({ jobId: id, workspaceId: ws.workspaceId });
  } finally {
    await saboteur.close();
    connection.disconnect();
    await generation.close();
    await events.close();
  }
});

it('sweeps past a job whose record the store cannot decode: one poisoned job never stops the rest', async () => {
  await stack.service('generator').kill('SIGKILL');
  const ws = await stack.createWorkspace('poison');
  const call = api(stack, ws.apiKey);
  const create = async (prompt: string) => {
    const res = await call('/v1/videos', { method: 'POST', json: { prompt, seconds: 1, size: '640x360' } });
    expect(res.status).toBe(200);
    return res.json.id as string;
  };
  const good = await create('good');
  const poisoned = await create('poisoned');
  // What a record with a lone surrogate looked like before records were written well-formed:
  // JSON that JavaScript reads but Redis's cjson refuses.
  const raw = (await stack.redis.get(stack.keys.job(poisoned)))!.replace('"poisoned"', '"\\ud800"');
  await stack.redis.set(stack.keys.job(poisoned), raw);

  const connection = stack.redis.duplicate({ maxRetriesPerRequest: null });
  const saboteur = new Worker(
    'generation',
    async () => {
      throw new Error('worker vanished');
    },
    { connection, prefix: bullPrefix(stack.prefix, 'generation') },
  );
  const generation = bullQueue(stack, 'generation');
  try {
    for (const id of [good, poisoned]) {
      await eventually(async () => ((await generation.getJobState(id)) === 'failed' ? true : undefined), 10_000, `${id} to fail in BullMQ`);
    }
  } finally {
    await saboteur.close();
    connection.disconnect();
    await generation.close();
  }

  const generator = await stack.startService('generator');
  // The poisoned job is the newest, so the sweep meets it first and must go on past it.
  const done = await eventually(
    async () => {
      const record = await stack.jobs.get(good);
      return record?.status === 'failed' ? record : undefined;
    },
    10_000,
    'the good job to be recorded failed',
  );
  expect(done.error).toMatchObject({ code: 'generation_failed' });
  // Its line may reach stdout a moment after the good job's record (the logger batches lines).
  const skipped = () => generator.hasLog((l) => l.message === 'give-up sweep skipped a job' && l.job === poisoned);
  await eventually(async () => (skipped() ? true : undefined), 5_000, 'the skip of the poisoned job logged');
});
