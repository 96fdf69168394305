import { Gauge, type Registry } from 'prom-client';
import { SCRAPE_READ_TIMEOUT_MS, withTimeout, type Logger } from '@media/common';
import type { QueueName } from './catalogue';
import { QUEUE_STATES, type QueueDepth } from './depth';

/**
 * `media_queue_jobs{queue,state}` and `media_queue_oldest_waiting_seconds{queue}`, read from
 * Redis when Prometheus scrapes (one round trip per queue), so they are as fresh as the scrape and
 * cost nothing between scrapes.
 */
export function registerQueueGauges(registry: Registry, depth: QueueDepth, queues: readonly QueueName[], logger: Logger): void {
  let reading: Promise<Map<QueueName, Awaited<ReturnType<QueueDepth['read']>>>> | undefined;
  // Both gauges are collected in one scrape; they share one read of each queue.
  const readAll = () => {
    reading ??= (async () => {
      // A scrape must not hang on a Redis that is away (worker connections retry for ever).
      const entries = await Promise.all(queues.map(async (q) => [q, await withTimeout(depth.read(q), SCRAPE_READ_TIMEOUT_MS)] as const));
      return new Map(entries);
    })().finally(() => setImmediate(() => (reading = undefined)));
    return reading;
  };
  new Gauge({
    name: 'media_queue_jobs',
    help: 'BullMQ jobs per queue and state; delayed_due = delayed jobs whose time has come (a subset of delayed).',
    labelNames: ['queue', 'state'],
    registers: [registry],
    async collect() {
      this.reset();
      try {
        for (const [queue, reading] of await readAll()) {
          for (const state of QUEUE_STATES) this.set({ queue, state }, reading.jobs[state]);
        }
      } catch (err) {
        logger.warn('queue gauges unavailable', { error: String(err) });
      }
    },
  });
  new Gauge({
    name: 'media_queue_oldest_waiting_seconds',
    help: 'Age of the oldest job that could run now (waiting, prioritized, or delayed and due), per queue.',
    labelNames: ['queue'],
    registers: [registry],
    async collect() {
      this.reset();
      try {
        for (const [queue, reading] of await readAll()) this.set({ queue }, reading.oldestWaitingSeconds);
      } catch {
        // Logged once by media_queue_jobs above.
      }
    },
  });
}
