/**
 * What one callback attempt in flight costs the dispatcher in memory, for sizing DISPATCHER_CONCURRENCY:
 * one WebhookSender in a child process of its own (bench/attempt-memory-child.ts) holds 0, 250, 500
 * and 1000 HTTPS attempts open at a receiver in this process that reads each request and never
 * answers; after a full GC at each step, the child's RSS and heap are read. The figure is the
 * growth per attempt from none to the most.
 */
import { TestReceiver } from '../test/dispatcher/support/receiver';
import { HelperProcess, waitUntil, type BenchContext } from './support';

export interface AttemptMemoryStep {
  inFlight: number;
  rssBytes: number;
  heapUsedBytes: number;
  externalBytes: number;
}

export interface AttemptMemoryResult {
  steps: AttemptMemoryStep[];
  rssPerAttemptBytes: number;
  heapPerAttemptBytes: number;
}

const STEPS = [0, 250, 500, 1000];

export async function benchAttemptMemory(ctx: BenchContext): Promise<AttemptMemoryResult> {
  const receiver = await TestReceiver.start(ctx.pki);
  receiver.script('/hold', () => 'hang');
  const child = await HelperProcess.start('attempt-memory-child.ts', { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --expose-gc`.trim() });
  try {
    await child.call('start', { caPem: ctx.pki.caPem });
    const steps: AttemptMemoryStep[] = [];
    for (const inFlight of STEPS) {
      const more = inFlight - receiver.inFlight;
      if (more > 0) await child.call('open', { url: receiver.url('/hold'), count: more });
      await waitUntil(() => receiver.inFlight === inFlight, 60_000, `${inFlight} attempts held open`, 20);
      const m = await child.call<{ rss: number; heapUsed: number; external: number }>('measure');
      steps.push({ inFlight, rssBytes: m.rss, heapUsedBytes: m.heapUsed, externalBytes: m.external });
    }
    const [first, last] = [steps[0]!, steps.at(-1)!];
    return {
      steps,
      rssPerAttemptBytes: (last.rssBytes - first.rssBytes) / last.inFlight,
      heapPerAttemptBytes: (last.heapUsedBytes + last.externalBytes - first.heapUsedBytes - first.externalBytes) / last.inFlight,
    };
  } finally {
    await child.stop();
    await receiver.stop();
  }
}
