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
  const saboteur = new Worker('generation', async () => {
    throw new Error('worker vanished');
  }, { connection, prefix: bullPrefix(stack.prefix) });
  const generation = bullQueue(stack, 'generation');
  const events = bullQueue(stack, 'job-events');
  try {
    await eventually(async () => ((await generation.getJobState(id)) === 'failed' ? true : undefined), 10_000, 'the job to fail in BullMQ');
    await saboteur.close();
    expect((await stack.jobs.get(id))?.status).toBe('queued');

    await stack.startService('generator');
    const job = await eventually(async () => {
      const record = await stack.jobs.get(id);
      return record?.status === 'failed' ? record : undefined;
    }, 10_000, 'the generator to record the failure');
    expect(job).toMatchObject({ cost: null, error: { code: 'generation_failed' } });
    expect(await chargesFor(stack, ws.workspaceId, id)).toEqual([]);
    expect((await finishedEvent(events, id)).data).toEqual({ jobId: id });
  } finally {
    await saboteur.close();
    connection.disconnect();
    await generation.close();
    await events.close();
  }
});
