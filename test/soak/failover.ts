// `npm run soak:failover [-- --promotions N]`: the three services, two of each, on three Redis
// servers (a primary, two replicas) behind three Sentinels, under a steady load of asynchronous
// images with callbacks, through N promotions (50 unless told; SOAK_PROMOTIONS too). The primary
// fails a different way each time, in turn: an operator's SENTINEL FAILOVER, a SIGKILL, a SIGSTOP
// (hung, its connections open) and a network cut (every node sits behind a loopback proxy that is
// its address for everyone; the cut stops every byte either way and closes nothing).
//
// After each promotion it measures, from the first Sentinel's +switch-master, how long until every
// service answers /readyz 200 and each gateway accepts a job again; then it mends the old primary
// (relaunched, resumed or healed), waits until it replicates the new one, and goes on. At the end
// every accepted job must have ended, been called back under one webhook-id and charged once if
// completed. It exits non-zero when a bound is broken, after printing its report.
//
// To look into one way of failing: SOAK_KINDS=sigstop,network-cut takes only those, in turn, and
// SOAK_VERBOSE=1 prints, for each promotion slower than 3 s, every service's time back, the
// not-ready answers meanwhile and the services' warnings.
import { Redis } from 'ioredis';
import { JobRepository } from '@media/jobs';
import { DispatcherHarness } from '../dispatcher/support/harness';
import { TestRedisSentinel, SENTINEL_NAME } from '../support/redis-sentinel';
import { eventually, freePort, type ServiceProcess } from '../support/stack';
import { jobsHeldToContract, percentile } from '../resilience/support/failover-run';

const KINDS = ['sentinel-failover', 'sigkill', 'sigstop', 'network-cut'] as const;
type Kind = (typeof KINDS)[number];
/** SOAK_KINDS=sigstop,network-cut: only those ways of failing, in turn (to look into one). */
const kinds: readonly Kind[] = process.env.SOAK_KINDS ? (process.env.SOAK_KINDS.split(',') as Kind[]) : KINDS;

/** Every service ready and every gateway accepting again within this of the Sentinels' announcement. */
const READY_BOUND_MS = 15_000;
/** Jobs submitted a second, spread over the two gateways. */
const SUBMISSIONS_PER_SECOND = 8;
/** Steady traffic before the first promotion and between two. */
const QUIET_MS = 3_000;
/** How long the Sentinels may take to announce a promotion before the soak calls it failed. */
const ANNOUNCE_WITHIN_MS = 30_000;
/** How long the old primary may take to replicate the new one once mended. */
const MEND_WITHIN_MS = 60_000;

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

function promotionsWanted(): number {
  const at = process.argv.indexOf('--promotions');
  const value = at >= 0 ? process.argv[at + 1] : process.env.SOAK_PROMOTIONS;
  const n = Number(value ?? 50);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--promotions wants a whole number of at least 1, not ${value}`);
  return n;
}

/** What one promotion did. */
interface Promotion {
  kind: Kind;
  /** From the failure to the first +switch-master. */
  announcedMs: number;
  /** From the announcement until every service answered ready and each gateway answered 202. */
  backMs: number;
  /** Each service's time back to ready, and each gateway's to its first 202, from the announcement. */
  perService: Record<string, number>;
  /** Submissions refused at least once (5xx, 429 or no answer) from the failure until back. */
  refused: number;
  /** Ready answers that turned to not ready again after the service was back, until the next failure. */
  relapses: number;
}

/** Submits jobs at a steady rate through both gateways, each retried (same Idempotency-Key) until accepted. */
class Load {
  readonly accepted: string[] = [];
  /** Every refused try: when, and of which submission (a submission is tried until accepted). */
  readonly refusals: { at: number; submission: number }[] = [];
  private running = true;
  private readonly pending: Promise<void>[] = [];
  private loop: Promise<void> | undefined;

  constructor(
    private readonly gateways: string[],
    private readonly apiKey: string,
    private readonly callbackUrl: string,
  ) {}

  start(): void {
    this.loop = (async () => {
      for (let i = 0; this.running; i++) {
        this.pending.push(this.submit(i));
        await pause(1_000 / SUBMISSIONS_PER_SECOND);
      }
    })();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
    await Promise.all(this.pending);
  }

  /** The latest refusal, for a report. */
  lastRefusal = '';

  /** One job through one gateway; true when it was accepted. */
  async submitOnce(gateway: string, key: string): Promise<boolean> {
    const res = await fetch(`${gateway}/v1/images/generations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${this.apiKey}`, 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify({ model: 'pixel-1', prompt: `soak ${key}`, size: '256x256', callback_url: this.callbackUrl }),
      signal: AbortSignal.timeout(10_000),
    }).catch((err: unknown) => {
      this.lastRefusal = String(err);
      return undefined;
    });
    if (!res) return false;
    const text = await res.text();
    if (res.status !== 202) this.lastRefusal = `${res.status} ${text.slice(0, 200)}`;
    if (res.status === 202) {
      const id = (JSON.parse(text) as { id: string }).id;
      if (!this.accepted.includes(id)) this.accepted.push(id);
      return true;
    }
    if (res.status < 500 && res.status !== 429) throw new Error(`submission ${key}: ${res.status} ${text}`);
    return false;
  }

  private async submit(i: number): Promise<void> {
    const gateway = this.gateways[i % this.gateways.length]!;
    for (;;) {
      if (await this.submitOnce(gateway, `soak-${i}`)) return;
      this.refusals.push({ at: Date.now(), submission: i });
      await pause(250);
    }
  }
}

/** The first +switch-master any Sentinel announces after `since`, with its time. */
class Announcements {
  private readonly heard: { at: number; primary: string }[] = [];
  private readonly subscribers: Redis[];

  constructor(sentinelPorts: number[]) {
    this.subscribers = sentinelPorts.map((port) => {
      const sub = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: null });
      sub.on('error', () => undefined);
      sub.on('message', (_channel: string, message: string) => {
        const [name, , , host, newPort] = message.split(' ');
        if (name === SENTINEL_NAME) this.heard.push({ at: Date.now(), primary: `${host}:${newPort}` });
      });
      void sub.subscribe('+switch-master');
      return sub;
    });
  }

  async after(since: number): Promise<{ at: number; primary: string }> {
    return eventually(async () => this.heard.find((h) => h.at >= since), ANNOUNCE_WITHIN_MS, 'the Sentinels to announce a promotion');
  }

  close(): void {
    for (const sub of this.subscribers) sub.disconnect();
  }
}

async function ready(service: ServiceProcess): Promise<{ ok: boolean; body: string }> {
  try {
    const res = await fetch(`${service.opsUrl}/readyz`, { signal: AbortSignal.timeout(2_000) });
    return { ok: res.status === 200, body: await res.text() };
  } catch (err) {
    return { ok: false, body: String(err) };
  }
}

const label = (service: ServiceProcess, i: number) => `${service.name}#${i}`;

async function main(): Promise<void> {
  const promotions = promotionsWanted();
  const started = Date.now();
  const sentinel = await TestRedisSentinel.start({ replicas: 2, proxied: true });
  const h = await DispatcherHarness.start(
    {
      WEBHOOK_RETRY_SCHEDULE: '1s,1s,1s,1s,1s',
      JOB_LOCK_MS: '2000',
      REDIS_WAIT_REPLICAS: '1',
      // The load alone, never the workspace's limits, decides what intake accepts.
      RATE_LIMIT_CREATE_PER_MINUTE: '100000',
      RATE_LIMIT_READ_PER_MINUTE: '100000',
    },
    { redisSentinel: sentinel },
  );
  const announcements = new Announcements(sentinel.sentinelPorts);
  const failures: string[] = [];
  const results: Promotion[] = [];
  try {
    const secondGatewayPort = await freePort();
    await Promise.all([
      h.stack.startService('api-gateway', { PORT: String(secondGatewayPort) }),
      h.stack.startService('generator'),
      h.stack.startService('webhook-dispatcher'),
    ]);
    const services = h.stack.processes;
    const gateways = [h.stack.baseUrl, `http://127.0.0.1:${secondGatewayPort}`];
    const posts = new Map<string, Set<string>>();
    h.receiver.script('/soak', (_n, request) => {
      const body = JSON.parse(request.body) as { data: { id: string } };
      posts.set(body.data.id, (posts.get(body.data.id) ?? new Set()).add(request.headers['webhook-id'] ?? ''));
      return { status: 200 };
    });
    const load = new Load(gateways, h.workspace.apiKey, h.receiver.url('/soak'));
    load.start();
    await pause(QUIET_MS);

    for (let n = 0; n < promotions; n++) {
      const kind = kinds[n % kinds.length]!;
      const old = await sentinel.primaryPort();
      const failedAt = Date.now();
      if (kind === 'sentinel-failover') await sentinel.failover();
      else if (kind === 'sigkill') await sentinel.kill(old);
      else if (kind === 'sigstop') sentinel.pause(old);
      else sentinel.cut(old);

      const announced = await announcements.after(failedAt).catch(async (err: unknown) => {
        throw new Error(`promotion ${n + 1} (${kind}): ${String(err)}; ${await sentinel.describe()}`);
      });
      // Back: every service ready, and each gateway accepting a job sent after the announcement.
      const perService: Record<string, number> = {};
      const backBy = announced.at + READY_BOUND_MS;
      const lastAnswer: Record<string, string> = {};
      while (Object.keys(perService).length < services.length + gateways.length && Date.now() < backBy + 45_000) {
        await Promise.all([
          ...services.map(async (service, i) => {
            const name = label(service, i);
            if (name in perService) return;
            const answer = await ready(service);
            lastAnswer[name] = answer.body.slice(0, 300);
            if (answer.ok) perService[name] = Date.now() - announced.at;
            else if (process.env.SOAK_VERBOSE) console.log(`  ${Date.now() - announced.at} ms: ${name} ${answer.body.slice(0, 300)}`);
          }),
          ...gateways.map(async (gateway, i) => {
            const name = `intake#${i}`;
            if (name in perService) return;
            if (await load.submitOnce(gateway, `probe-${n}-${i}-${Date.now()}`).catch(() => false)) perService[name] = Date.now() - announced.at;
          }),
        ]);
        await pause(100);
      }
      const backMs = Math.max(...Object.values(perService), 0);
      const missing = [...services.map(label), ...gateways.map((_g, i) => `intake#${i}`)].filter((name) => !(name in perService));
      if (missing.length > 0 || backMs > READY_BOUND_MS) {
        const late = Object.entries(perService).filter(([, ms]) => ms > READY_BOUND_MS);
        failures.push(
          `promotion ${n + 1} (${kind}): not back within ${READY_BOUND_MS} ms of the announcement: ` +
            `${[...missing.map((m) => `${m} never (last answer: ${lastAnswer[m] ?? load.lastRefusal})`), ...late.map(([m, ms]) => `${m} after ${ms} ms`)].join('; ')}`,
        );
      }

      // Mend the old primary; the Sentinels make it a replica of the new one.
      if (kind === 'sigkill') await sentinel.launchNode(old);
      else if (kind === 'sigstop') sentinel.resume(old);
      else if (kind === 'network-cut') sentinel.heal(old);
      let relapses = 0;
      const watchRelapses = (async () => {
        const until = Date.now() + QUIET_MS;
        while (Date.now() < until) {
          const answers = await Promise.all(services.map(ready));
          relapses += answers.filter((a) => !a.ok).length;
          await pause(250);
        }
      })();
      await eventually(
        async () => ((await sentinel.replicating(old).catch(() => false)) ? true : undefined),
        MEND_WITHIN_MS,
        `the old primary ${old} to replicate the new one`,
      ).catch(async (err: unknown) => {
        throw new Error(`promotion ${n + 1} (${kind}): ${String(err)}; ${await sentinel.describe()}`);
      });
      await watchRelapses;
      const refused = new Set(load.refusals.filter(({ at }) => at >= failedAt && at <= announced.at + backMs).map((r) => r.submission)).size;
      const result: Promotion = { kind, announcedMs: announced.at - failedAt, backMs, perService, refused, relapses };
      results.push(result);
      const slowest = Object.entries(perService).sort(([, a], [, b]) => b - a)[0];
      console.log(
        `promotion ${String(n + 1).padStart(2)}/${promotions} ${kind.padEnd(17)} announced after ${String(result.announcedMs).padStart(5)} ms, ` +
          `back ${String(backMs).padStart(5)} ms later (last: ${slowest?.[0]}), ${String(refused).padStart(3)} submissions refused, ${relapses} relapses`,
      );
      if (backMs > READY_BOUND_MS / 5 && process.env.SOAK_VERBOSE) {
        console.log(`  per service: ${JSON.stringify(perService)}; intake's last refusal: ${load.lastRefusal}`);
        for (const [i, service] of services.entries()) {
          const lines = service.lines.filter((l) => Number(new Date(String(l.timestamp))) >= failedAt && l.level !== 'info');
          for (const line of lines.slice(0, 8)) console.log(`  ${label(service, i)}: ${JSON.stringify(line).slice(0, 400)}`);
        }
      }
    }

    await load.stop();
    const reader = h.stack.newClient();
    reader.on('error', () => undefined);
    try {
      const lost = await jobsHeldToContract(h, new JobRepository(reader, h.stack.keys), load.accepted, posts, 180_000);
      if (lost.length > 0) failures.push(`${lost.length} accepted jobs lost: ${lost.slice(0, 5).join(', ')}`);
      console.log(
        `\n${load.accepted.length} jobs accepted, ${lost.length} lost; every other one ended, called back under one webhook-id, charged once if completed`,
      );
    } catch (err) {
      failures.push(String(err));
    } finally {
      reader.disconnect();
    }
  } catch (err) {
    failures.push(String(err));
  } finally {
    announcements.close();
    report(results);
    await h.stop().catch(() => undefined);
    await sentinel.destroy().catch(() => undefined);
  }
  console.log(`\nsoak took ${Math.round((Date.now() - started) / 1000)} s`);
  if (failures.length > 0) {
    console.error(`\nFAILED:\n${failures.join('\n')}`);
    process.exitCode = 1;
  } else {
    console.log(`passed: ${results.length} promotions, every service back within ${READY_BOUND_MS / 1000} s of each announcement`);
  }
}

function report(results: Promotion[]): void {
  const stats = (values: number[]) =>
    values.length === 0 ? 'none' : `p50 ${percentile(values, 50)}, p99 ${percentile(values, 99)}, max ${Math.max(...values)}`;
  console.log('\n| Failure | Promotions | Announced after (ms) | Back to ready after the announcement (ms) | Submissions refused |');
  console.log('| --- | --- | --- | --- | --- |');
  for (const kind of KINDS) {
    const of = results.filter((r) => r.kind === kind);
    if (of.length === 0) continue;
    console.log(`| ${kind} | ${of.length} | ${stats(of.map((r) => r.announcedMs))} | ${stats(of.map((r) => r.backMs))} | ${stats(of.map((r) => r.refused))} |`);
  }
}

main().then(
  // The run's Redis clients and timers are done with: leave without waiting on their sockets.
  () => process.exit(),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
