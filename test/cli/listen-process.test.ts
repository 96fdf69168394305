// `npx media-callbacks listen` as a developer runs it: the built CLI as a child process, connected
// through a load balancer to two gateway replicas (real processes, as are the generator and the
// dispatcher), forwarding to a plain-HTTP handler on loopback that verifies every delivery with
// `standardwebhooks` and the secret the CLI printed. The CLI killed mid-ladder leaves attempts
// `relay_offline` and gets the next one once started again; the gateway it is connected to killed,
// it reconnects to the other one and deliveries go on.
import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { Webhook } from 'standardwebhooks';
import { callbackIdFor } from '@media/domain';
import { LocalHandler } from '../../tools/cli/src/test-support/local-handler';
import { DispatcherHarness } from '../dispatcher/support/harness';
import { api, eventually, freePort } from '../support/stack';
import type { ServiceProcess } from '../support/stack';
import { TcpBalancer } from '../support/tcp-balancer';

const BIN = resolve(__dirname, '../../tools/cli/bin/media-callbacks.js');

let h: DispatcherHarness;
let second: ServiceProcess;
let secondPort: number;
let balancer: TcpBalancer;
let handler: LocalHandler;
/** Deliveries the handler verified, by webhook id. */
const verified = new Map<string, { type: string; data: { id: string } }>();
/** What the handler answers to a delivery that verifies. */
let answer = 200;

/** A running `media-callbacks listen`, with what it printed so far. */
interface Cli {
  child: ChildProcess;
  out: string[];
  err: string[];
}
const clis: Cli[] = [];

function startCli(extra: string[] = []): Cli {
  const child = spawn(
    process.execPath,
    [BIN, 'listen', '--forward-to', handler.url('/hooks').href, '--base-url', `http://127.0.0.1:${balancer.port}`, '--print-secret', ...extra],
    { env: { PATH: process.env.PATH, MEDIA_API_KEY: h.workspace.apiKey }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const cli: Cli = { child, out: [], err: [] };
  createInterface({ input: child.stdout! }).on('line', (line) => cli.out.push(line));
  createInterface({ input: child.stderr! }).on('line', (line) => cli.err.push(line));
  clis.push(cli);
  return cli;
}

/** A line the CLI printed on stdout (or, with `stream: 'err'`, on stderr, where it reports its connection). */
async function line(cli: Cli, pattern: RegExp, from = 0, timeoutMs = 20_000, stream: 'out' | 'err' = 'out'): Promise<string> {
  return eventually(
    () => cli[stream].slice(from).find((l) => pattern.test(l)),
    timeoutMs,
    `a line matching ${pattern} (out: ${cli.out.join(' | ')}; err: ${cli.err.join(' | ')})`,
  );
}

beforeAll(async () => {
  h = await DispatcherHarness.start({ WEBHOOK_RETRY_SCHEDULE: '1s,1s,2s,2s,3s', WEBHOOK_TIMEOUT_MS: '3000' });
  secondPort = await freePort();
  second = await h.stack.startService('api-gateway', { PORT: String(secondPort) });
  balancer = await TcpBalancer.start([Number(new URL(h.stack.baseUrl).port), secondPort]);
  handler = await LocalHandler.start();
  handler.behaviour = (req, res, received) => {
    const headers = Object.fromEntries(Object.entries(req.headers).map(([name, value]) => [name, String(value)]));
    try {
      const event = new Webhook(h.workspace.signingSecret).verify(received.body, headers) as { type: string; data: { id: string } };
      verified.set(headers['webhook-id']!, event);
    } catch {
      res.writeHead(400).end('bad signature');
      return;
    }
    res.writeHead(answer, { 'content-type': 'text/plain' }).end(answer === 200 ? 'handled' : 'not now');
  };
}, 120_000);

afterAll(async () => {
  for (const cli of clis) cli.child.kill('SIGKILL');
  await balancer?.stop();
  await handler?.stop();
  await h?.stop();
});

it('relays callbacks to a handler on the developer’s machine through the CLI, across a CLI restart and the loss of its gateway', async () => {
  let cli = startCli(['--events', 'video.completed']);
  const ready = await line(cli, /^Ready\./);
  const relayUrl = /^Ready\. Callbacks to (\S+) /.exec(ready)![1]!;
  expect(relayUrl).toMatch(new RegExp(`^${h.stack.baseUrl}/webhook-relay/rly_[0-9a-z]{32}$`));
  // The secret it printed is the one the deliveries verify with.
  expect(cli.out[1]).toBe(h.workspace.signingSecret);

  // A job with the relay URL as callback_url.
  const image = await h.jobs.image(relayUrl, 'to the laptop');
  const imageMessage = callbackIdFor(image, 'image.completed');
  await h.settled(imageMessage, ['delivered']);
  expect(verified.get(imageMessage)).toMatchObject({ type: 'image.completed', data: { id: image } });
  await line(cli, new RegExp(`  image\\.completed  ${imageMessage}  200  \\d+ ms$`));

  // A video without callback_url, for the --events subscription.
  const call = api(h.stack, h.workspace.apiKey);
  const video = await call('/v1/videos', { method: 'POST', json: { model: 'motion-1', prompt: 'to the laptop', seconds: 1, size: '640x360' } });
  const videoMessage = callbackIdFor(video.json.id, 'video.completed', 'relay');
  await h.settled(videoMessage, ['delivered']);
  expect(verified.get(videoMessage)).toMatchObject({ type: 'video.completed', data: { id: video.json.id } });

  // A handler answering 500: the ladder's next attempt comes through the relay again; the CLI
  // killed after the first, the next ones find no listener; started again, it gets the next.
  answer = 500;
  const failing = callbackIdFor(await h.jobs.image(relayUrl, 'not yet'), 'image.completed');
  const [first] = await h.attempts(failing, 1);
  expect(first).toMatchObject({ status: 500, error: 'http_error', excerpt: 'not now' });
  cli.child.kill('SIGKILL');
  const offline = await eventually(
    async () => (await h.callbacks.attempts(failing)).find((a) => a.error === 'relay_offline'),
    15_000,
    'an attempt with no listener',
  );
  expect(offline).toMatchObject({ status: null, error_detail: 'no media-callbacks listener is connected' });
  answer = 200;
  cli = startCli(['--events', 'video.completed']);
  await line(cli, /^Ready\./);
  const { attempts } = await h.settled(failing, ['delivered'], 30_000);
  expect(attempts.map((a) => a.error)).toEqual(['http_error', ...attempts.slice(1, -1).map(() => 'relay_offline'), null]);

  // The gateway holding the CLI's connection killed: the CLI reconnects, through the balancer, to
  // the other one, and the relay goes on.
  const [inUse] = balancer.backendsInUse();
  const lost = inUse === secondPort ? second : h.stack.processes.find((p) => p !== second && p.name === 'api-gateway')!;
  const errLines = cli.err.length;
  await lost.kill('SIGKILL');
  await eventually(
    () => (balancer.backendsInUse().length === 1 && balancer.backendsInUse()[0] !== inUse ? true : undefined),
    30_000,
    'a connection to the other gateway',
  );
  await line(cli, /^Reconnected/, errLines, 30_000, 'err');
  const survivor = inUse === secondPort ? h.stack.baseUrl : `http://127.0.0.1:${secondPort}`;
  const after = await api({ ...h.stack, baseUrl: survivor } as typeof h.stack, h.workspace.apiKey)('/v1/images/generations', {
    method: 'POST',
    json: { model: 'pixel-1', prompt: 'after the failover', size: '256x256', callback_url: relayUrl },
  });
  expect(after.status).toBe(202);
  const afterMessage = callbackIdFor(after.json.id, 'image.completed');
  await h.settled(afterMessage, ['delivered']);
  expect(verified.get(afterMessage)).toMatchObject({ data: { id: after.json.id } });
}, 180_000);
