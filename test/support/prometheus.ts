import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { freePort } from './basics';

/** One sample of an instant query's vector. */
export interface PromSample {
  metric: Record<string, string>;
  value: number;
}

/** An alert as `/api/v1/alerts` lists it. */
export interface PromAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  state: 'pending' | 'firing';
  activeAt: string;
  value: string;
}

export interface TestPrometheusOptions {
  /** Scrape job name → `host:port` of a `/metrics` endpoint. */
  targets: Record<string, string>;
  /** Scrape and rule-evaluation interval, in seconds. */
  intervalSeconds?: number;
  /** Rule groups in Prometheus's format (a rules file's `groups`), loaded at start. */
  ruleGroups?: unknown[];
  /** Labels every scraped series gets, as a PodMonitor adds `namespace`. */
  targetLabels?: Record<string, string>;
}

/**
 * A real `prometheus` server on a free loopback port, with its own temporary directory (config,
 * rules, TSDB). `stop()` ends it and removes the directory, and is safe to call twice: call it in an
 * `afterAll`, which Jest runs whatever the tests did.
 */
export class TestPrometheus {
  private stopping: Promise<void> | undefined;
  /** What the server wrote to stderr (its log), for failure messages. */
  log = '';

  private constructor(
    readonly port: number,
    readonly dir: string,
    private readonly child: ChildProcess,
  ) {}

  static async start(options: TestPrometheusOptions): Promise<TestPrometheus> {
    const interval = `${options.intervalSeconds ?? 1}s`;
    const dir = mkdtempSync(join(tmpdir(), 'test-prometheus-'));
    let prometheus: TestPrometheus | undefined;
    try {
      const config = {
        // The timeout may not exceed the interval; a scrape on loopback takes milliseconds.
        global: { scrape_interval: interval, scrape_timeout: interval, evaluation_interval: interval },
        rule_files: options.ruleGroups ? ['rules.yaml'] : [],
        scrape_configs: Object.entries(options.targets).map(([job, target]) => ({
          job_name: job,
          static_configs: [{ targets: [target], labels: options.targetLabels ?? {} }],
        })),
      };
      writeFileSync(join(dir, 'prometheus.yml'), stringify(config));
      if (options.ruleGroups) writeFileSync(join(dir, 'rules.yaml'), stringify({ groups: options.ruleGroups }, { lineWidth: 0 }));
      const port = await freePort();
      const args = [
        `--config.file=${join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--log.level=warn',
      ];
      // Through setpriv (util-linux) where there is one, the kernel ends the server when this Jest
      // worker dies without stopping it (killed, crashed): no orphan keeps running.
      const child = hasSetpriv()
        ? spawn('setpriv', ['--pdeathsig', 'KILL', 'prometheus', ...args], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] })
        : spawn('prometheus', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
      prometheus = new TestPrometheus(port, dir, child);
      const started = prometheus;
      child.stderr!.on('data', (chunk: Buffer) => (started.log += chunk.toString()));
      await new Promise<void>((resolve, reject) => {
        child.once('spawn', resolve);
        child.once('error', reject);
      });
      const deadline = Date.now() + 20_000;
      for (;;) {
        if (child.exitCode !== null || child.signalCode !== null) throw new Error(`prometheus exited (${child.exitCode ?? child.signalCode}): ${started.log}`);
        try {
          if ((await fetch(`${started.url}/-/ready`)).status === 200) break;
        } catch {
          // Not listening yet.
        }
        if (Date.now() > deadline) throw new Error(`prometheus not ready after 20 s: ${started.log}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      return started;
    } catch (err) {
      if (prometheus) await prometheus.stop();
      else rmSync(dir, { recursive: true, force: true });
      throw err;
    }
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** An instant query's vector (`/api/v1/query`); throws on a query error or a result of another type. */
  async query(expr: string): Promise<PromSample[]> {
    const body = await this.api('/api/v1/query', { query: expr });
    const data = body.data as { resultType: string; result: { metric: Record<string, string>; value: [number, string] }[] };
    if (data.resultType !== 'vector') throw new Error(`${expr}: a ${data.resultType}, not a vector`);
    return data.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
  }

  /** The value of a query whose answer is one unlabelled sample (e.g. a `sum(...)`); undefined when it is empty. */
  async value(expr: string): Promise<number | undefined> {
    const result = await this.query(expr);
    if (result.length > 1) throw new Error(`${expr}: ${result.length} samples, not one`);
    return result[0]?.value;
  }

  /** Pending and firing alerts (`/api/v1/alerts`). */
  async alerts(): Promise<PromAlert[]> {
    return ((await this.api('/api/v1/alerts')).data as { alerts: PromAlert[] }).alerts;
  }

  /** The loaded rule groups (`/api/v1/rules`), each rule with its health and last error. */
  async rules(): Promise<{ name: string; rules: { name: string; type: string; health: string; lastError?: string }[] }[]> {
    return ((await this.api('/api/v1/rules')).data as { groups: [] }).groups;
  }

  async stop(): Promise<void> {
    this.stopping ??= (async () => {
      const exited = this.child.exitCode !== null || this.child.signalCode !== null ? Promise.resolve() : once(this.child, 'exit');
      this.child.kill('SIGTERM');
      // It flushes its head block on SIGTERM; a server that takes over 10 s to do so is killed.
      const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
      try {
        await exited;
      } finally {
        clearTimeout(timer);
        rmSync(this.dir, { recursive: true, force: true });
      }
    })();
    return this.stopping;
  }

  private async api(path: string, params: Record<string, string> = {}): Promise<{ status: string; data: unknown; error?: string }> {
    // POST with a form body: queries need no URL encoding and have no length limit.
    const res = await fetch(`${this.url}${path}`, Object.keys(params).length ? { method: 'POST', body: new URLSearchParams(params) } : {});
    const body = (await res.json()) as { status: string; data: unknown; error?: string };
    if (body.status !== 'success') throw new Error(`${path} ${JSON.stringify(params)}: ${body.error ?? res.status}`);
    return body;
  }
}

let setprivFound: boolean | undefined;
const hasSetpriv = () => (setprivFound ??= spawnSync('setpriv', ['--version'], { stdio: 'ignore' }).status === 0);
