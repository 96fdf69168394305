import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Logger } from './logger';
import { withTimeout } from './timeout';

/**
 * Prometheus metrics. The names are a contract (design section 2, the KEDA scalers and the
 * PrometheusRule read them): change one and the autoscaling and alerts go blind without an error.
 * Each process has its own registry, served on its ops port; nothing here is a global.
 */
export const METRIC_PREFIX = 'media_';

/** One registry per process, with Node's process metrics and a `service` label on every series. */
export function createMetricsRegistry(service: string): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry, prefix: METRIC_PREFIX });
  return registry;
}

/** What the generator reports about finished jobs. */
export interface GenerationMetrics {
  /** `outcome`: `completed`, or the job's error code (`moderation_blocked`, `invalid_image`, `generation_failed`). */
  jobFinished(kind: string, outcome: string, secondsSinceCreated: number): void;
  charged(amountUsd: number): void;
}

/** What the dispatcher reports about callback attempts. */
export interface CallbackMetrics {
  /**
   * One recorded attempt. `error` is the attempt's error class or `none`; the latencies are
   * measured from the job's end (the event the callback announces) and given when this attempt
   * was the callback's first, or the one that delivered it.
   */
  attempt(outcome: 'delivered' | 'failed', error: string, latency: { firstAttemptSeconds?: number; deliveredSeconds?: number }): void;
  /** An attempt set aside because its destination had no free slot. */
  deferred(): void;
}

/** What the gateway reports per HTTP request; `route` is the route pattern, never the raw path. */
export interface HttpMetrics {
  request(route: string, method: string, status: number, seconds: number): void;
}

/** What the retention sweep reports, once per sweep. */
export interface RetentionMetrics {
  swept(counts: { jobsRemoved: number; callbacksRemoved: number; blobsRemoved: number; jobsHeld: number; errors: number }): void;
}

export const NO_GENERATION_METRICS: GenerationMetrics = { jobFinished: () => undefined, charged: () => undefined };
export const NO_RETENTION_METRICS: RetentionMetrics = { swept: () => undefined };
export const NO_CALLBACK_METRICS: CallbackMetrics = { attempt: () => undefined, deferred: () => undefined };

/** Callback latencies span a receiver's first answer (seconds) to the end of the ladder (~10.6 h). */
const CALLBACK_BUCKETS = [0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 1_800, 3_600, 7_200, 14_400, 28_800, 43_200];
/** Images take seconds, videos minutes. */
const GENERATION_BUCKETS = [0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];

const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

export class PromHttpMetrics implements HttpMetrics {
  private readonly requests: Counter<'route' | 'method' | 'status'>;
  private readonly durations: Histogram<'route' | 'method' | 'status'>;

  constructor(registry: Registry) {
    this.requests = new Counter({
      name: 'media_http_requests_total',
      help: 'HTTP requests answered, by route pattern, method and status.',
      labelNames: ['route', 'method', 'status'],
      registers: [registry],
    });
    // Up to minutes: synchronous image calls wait for the generator (SYNC_IMAGE_TIMEOUT_MS).
    this.durations = new Histogram({
      name: 'media_http_request_duration_seconds',
      help: 'HTTP request latency, by route pattern, method and status.',
      labelNames: ['route', 'method', 'status'],
      buckets: HTTP_BUCKETS,
      registers: [registry],
    });
  }

  request(route: string, method: string, status: number, seconds: number): void {
    const labels = { route, method, status: String(status) };
    this.requests.inc(labels);
    this.durations.observe(labels, seconds);
  }
}

export class PromGenerationMetrics implements GenerationMetrics {
  private readonly jobs: Counter<'kind' | 'outcome'>;
  private readonly durations: Histogram<'kind' | 'outcome'>;
  private readonly charges: Counter;

  constructor(registry: Registry) {
    this.jobs = new Counter({
      name: 'media_generation_jobs_total',
      help: 'Generation jobs finished, by kind and outcome (completed or the error code).',
      labelNames: ['kind', 'outcome'],
      registers: [registry],
    });
    this.durations = new Histogram({
      name: 'media_generation_job_duration_seconds',
      help: 'Time from accepting a generation job to its final state.',
      labelNames: ['kind', 'outcome'],
      buckets: GENERATION_BUCKETS,
      registers: [registry],
    });
    this.charges = new Counter({
      name: 'media_charges_usd_total',
      help: 'Charges written to the ledger, in US dollars (each job is charged at most once).',
      registers: [registry],
    });
  }

  jobFinished(kind: string, outcome: string, secondsSinceCreated: number): void {
    this.jobs.inc({ kind, outcome });
    this.durations.observe({ kind, outcome }, Math.max(0, secondsSinceCreated));
  }

  charged(amountUsd: number): void {
    if (amountUsd > 0) this.charges.inc(amountUsd);
  }
}

export class PromCallbackMetrics implements CallbackMetrics {
  private readonly attempts: Counter<'outcome' | 'error'>;
  private readonly firstAttempt: Histogram;
  private readonly delivered: Histogram;
  private readonly deferrals: Counter;

  constructor(registry: Registry) {
    this.deferrals = new Counter({
      name: 'media_callback_deferrals_total',
      help: 'Callback attempts set aside because their destination had no free slot (they hold no worker while they wait).',
      registers: [registry],
    });
    this.attempts = new Counter({
      name: 'media_callback_attempts_total',
      help: 'Callback attempts, by outcome and error class (none when delivered).',
      labelNames: ['outcome', 'error'],
      registers: [registry],
    });
    this.firstAttempt = new Histogram({
      name: 'media_callback_first_attempt_seconds',
      help: "Time from a job's end to the first attempt at its callback.",
      buckets: CALLBACK_BUCKETS,
      registers: [registry],
    });
    this.delivered = new Histogram({
      name: 'media_callback_delivered_seconds',
      help: "Time from a job's end to the attempt that delivered its callback.",
      buckets: CALLBACK_BUCKETS,
      registers: [registry],
    });
  }

  attempt(outcome: 'delivered' | 'failed', error: string, latency: { firstAttemptSeconds?: number; deliveredSeconds?: number }): void {
    this.attempts.inc({ outcome, error });
    if (latency.firstAttemptSeconds !== undefined) this.firstAttempt.observe(Math.max(0, latency.firstAttemptSeconds));
    if (latency.deliveredSeconds !== undefined) this.delivered.observe(Math.max(0, latency.deliveredSeconds));
  }

  deferred(): void {
    this.deferrals.inc();
  }
}

/** How long a scrape waits for one read from Redis (a queue's depth, a gauge's count) before it reports none. */
export const SCRAPE_READ_TIMEOUT_MS = 2_000;

/**
 * The retention sweep's counters. What is due and not yet removed is a gauge read at scrape time
 * (`media_retention_due{kind}`, see the generator's wiring): a sweep that stopped shows as that
 * number growing, whatever the counters say.
 */
export class PromRetentionMetrics implements RetentionMetrics {
  private readonly removed: Counter<'kind'>;
  private readonly held: Counter;
  private readonly errors: Counter;

  constructor(registry: Registry) {
    this.removed = new Counter({
      name: 'media_retention_removed_total',
      help: 'What retention removed: finished jobs (kind job), callbacks with their attempt logs (callback), media blobs (blob).',
      labelNames: ['kind'],
      registers: [registry],
    });
    this.held = new Counter({
      name: 'media_retention_held_total',
      help: 'Due jobs kept for now because their callback was pending or not yet made.',
      registers: [registry],
    });
    this.errors = new Counter({
      name: 'media_retention_errors_total',
      help: 'Jobs or callbacks retention could not remove this time (logged; tried again later).',
      registers: [registry],
    });
  }

  swept(counts: { jobsRemoved: number; callbacksRemoved: number; blobsRemoved: number; jobsHeld: number; errors: number }): void {
    this.removed.inc({ kind: 'job' }, counts.jobsRemoved);
    this.removed.inc({ kind: 'callback' }, counts.callbacksRemoved);
    this.removed.inc({ kind: 'blob' }, counts.blobsRemoved);
    this.held.inc(counts.jobsHeld);
    this.errors.inc(counts.errors);
  }
}

/** A gauge whose labelled values are read at scrape time, e.g. `media_callbacks{status}`. */
export function registerScrapedGauge<L extends string>(
  registry: Registry,
  spec: { name: string; help: string; labelNames: readonly L[] },
  read: () => Promise<Array<[Record<L, string>, number]>>,
  logger: Logger,
): void {
  new Gauge<L>({
    name: spec.name,
    help: spec.help,
    labelNames: spec.labelNames,
    registers: [registry],
    async collect() {
      this.reset();
      try {
        for (const [labels, value] of await withTimeout(read(), SCRAPE_READ_TIMEOUT_MS)) this.set(labels as never, value);
      } catch (err) {
        logger.warn('gauge unavailable', { metric: spec.name, error: String(err) });
      }
    },
  });
}

/**
 * Writes that fewer than `REDIS_WAIT_REPLICAS` replicas confirmed within `REDIS_WAIT_TIMEOUT_MS`
 * (they went ahead: see ReplicaWait). Anything but flat means a promotion now could lose them.
 */
export function replicaWaitShortCounter(registry: Registry): Counter {
  return new Counter({
    name: 'media_redis_replica_wait_short_total',
    help: 'Acceptances and finishes that fewer than REDIS_WAIT_REPLICAS replicas confirmed in time.',
    registers: [registry],
  });
}
