/**
 * The dispatcher's naive peer: what a newcomer writes from the design card in an afternoon. A BullMQ
 * worker on a `callbacks` queue whose job data is the callback URL and the envelope JSON; per job it
 * signs Standard Webhooks style (HMAC-SHA256 of `id.timestamp.body`) and POSTs with got over one
 * keep-alive https agent that trusts the bench's CA. A non-2xx answer throws, and BullMQ's `attempts`
 * and `backoff` (set by the producer, bench/dispatcher.ts) are the retry ladder.
 *
 * It runs as a process of its own, forked and driven over IPC like bench/receiver.ts, because ours
 * does: the bench process only adds the jobs and polls the receiver, so each sender has its own
 * event loop and core, and its CPU per callback is read from /proc the same way as ours.
 *
 * What it leaves out (docs/development.md, "Benchmarks"): no URL guard (address check per attempt,
 * pinned connection), no callback record or attempt log, no destination caps or isolation, no
 * rendering (fresh links) per attempt, no per-workspace secrets or rotation, no Overview counts, no
 * metrics, logs or tracing, no idempotent re-run (a replayed job is a second POST).
 */
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Agent } from 'node:https';
import { Redis } from 'ioredis';
import { Worker } from 'bullmq';
import { serveHelper } from './ipc';

/** One callback to make: where, and the exact body. */
export interface NaiveCallbackJob {
  url: string;
  body: string;
}

let worker: Worker<NaiveCallbackJob> | undefined;

async function start(redisUrl: string, prefix: string, concurrency: number, caFile: string, secret: string): Promise<void> {
  const { got } = await import('got');
  const agent = new Agent({ keepAlive: true, ca: readFileSync(caFile) });
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');

  worker = new Worker<NaiveCallbackJob>(
    'callbacks',
    async (job) => {
      const id = `msg_${job.id}`;
      const timestamp = Math.floor(Date.now() / 1000);
      const signature = createHmac('sha256', key).update(`${id}.${timestamp}.${job.data.body}`).digest('base64');
      await got.post(job.data.url, {
        body: job.data.body,
        headers: {
          'content-type': 'application/json',
          'webhook-id': id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': `v1,${signature}`,
        },
        agent: { https: agent },
        followRedirect: false,
        retry: { limit: 0 },
        timeout: { request: 15_000 },
      });
    },
    { connection: new Redis(redisUrl, { maxRetriesPerRequest: null }), prefix: `${prefix}:bull`, concurrency },
  );
  await worker.waitUntilReady();
}

serveHelper({
  ping: () => true,
  start: (msg) => start(String(msg.redisUrl), String(msg.prefix), Number(msg.concurrency), String(msg.caFile), String(msg.secret)),
  stop: async () => {
    await worker?.close();
  },
});
