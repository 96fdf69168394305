/**
 * The measured side of bench/attempt-memory.ts, a child of its own (forked, driven over IPC) so that
 * nothing but one WebhookSender and its attempts lives in its heap: `open` starts attempts that the
 * parent's receiver holds open, `measure` collects garbage and reports the process's memory.
 */
import { CallbackUrlGuard } from '@media/callback-guard';
import { WebhookSender } from '../services/webhook-dispatcher/src/webhook-sender';
import { serveHelper } from './ipc';

let sender: WebhookSender | undefined;
const guard = new CallbackUrlGuard({ allowHttp: false, allowedCidrs: ['127.0.0.0/8'] }, async () => [{ address: '127.0.0.1', family: 4 as const }]);
const body = Buffer.from(
  JSON.stringify({
    type: 'image.completed',
    timestamp: new Date().toISOString(),
    data: { id: 'req_x', object: 'image.generation', data: [{ url: 'https://example.test/x' }] },
  }),
);

serveHelper({
  ping: () => 'pong',
  start: async (msg) => {
    // As the dispatcher's sender: its pool sized to the destination cap, a timeout no attempt here reaches.
    sender = await WebhookSender.create({ timeoutMs: 600_000, extraCaPem: String(msg.caPem), pool: { maxIdleSocketsPerKey: 100 } });
  },
  open: async (msg) => {
    const target = await guard.check(String(msg.url));
    for (let i = 0; i < Number(msg.count); i++) {
      void sender!.send(target, body, { 'content-type': 'application/json', 'webhook-id': `msg_${i}`, 'webhook-timestamp': '1', 'webhook-signature': 'v1,x' });
    }
  },
  measure: () => {
    // Twice: the first pass frees what finalizers release for the second.
    global.gc?.();
    global.gc?.();
    const { rss, heapUsed, external } = process.memoryUsage();
    return { rss, heapUsed, external };
  },
});
