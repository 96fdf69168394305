/**
 * What one callback attempt in flight costs the dispatcher in memory, for sizing DISPATCHER_CONCURRENCY:
 * one WebhookSender in a child process of its own (bench/attempt-memory-child.ts) holds 0, 250, 500
 * and 1000 HTTPS attempts open at a receiver in this process that reads each request and never
 * answers; after a full GC at each step, the child's RSS and heap are read. Each step's figure is
 * its growth over none divided by its attempts; the headline is that of the most.
 */
import { TestReceiver } from '../test/dispatcher/support/receiver';
import { HelperProcess, waitUntil, type BenchContext } from './support';

export interface AttemptMemoryStep {
  inFlight: number;
  rssBytes: number;
  heapUsedBytes: number;
  externalBytes: number;
  /** Growth over the step with none in flight, per attempt; null for that step itself. */
  rssPerAttemptBytes: number | null;
  heapPerAttemptBytes: number | null;
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
      const none = steps[0];
      const per = (grown: number) => (none === undefined || inFlight === 0 ? null : grown / inFlight);
      steps.push({
        inFlight,
        rssBytes: m.rss,
        heapUsedBytes: m.heapUsed,
        externalBytes: m.external,
        rssPerAttemptBytes: per(m.rss - (none?.rssBytes ?? 0)),
        heapPerAttemptBytes: per(m.heapUsed + m.external - (none?.heapUsedBytes ?? 0) - (none?.externalBytes ?? 0)),
      });
    }
    const most = steps.at(-1)!;
    return { steps, rssPerAttemptBytes: most.rssPerAttemptBytes!, heapPerAttemptBytes: most.heapPerAttemptBytes! };
  } finally {
    await child.stop();
    await receiver.stop();
  }
}
