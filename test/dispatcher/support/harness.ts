import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { Queue } from 'bullmq';
import { bullPrefix, createLogger, loadConfig } from '@media/common';
import { type CallbackAdminHandle, CallbackRepository, createCallbackAdmin } from '@media/callbacks';
import { type CallbackAttempt, callbackIdFor, type CallbackRecord, type CallbackState, eventTypeFor } from '@media/domain';
import { eventually, TestStack, type TestWorkspace } from '../../support/stack';
import { finished, type Finished } from '../../support/process';
import { JobClient } from './jobs';
import { makeTestPki, type TestPki } from './pki';
import { TestReceiver } from './receiver';

const ROOT = resolve(__dirname, '../../..');

/** Env every dispatcher test needs: a loopback receiver with our own CA, and a word that fails jobs. */
export const baseEnv = (pki: TestPki): Record<string, string> => ({
  CALLBACK_ALLOWED_CIDRS: '127.0.0.0/8,::1/128',
  CALLBACK_CA_FILE: pki.caFile,
  MODERATION_BLOCKLIST: 'forbidden',
  DOCS_URL: 'https://docs.media.test',
});

/**
 * One test file's world: the three real services on their own key prefix, an HTTPS receiver on
 * loopback, a workspace, and an in-process CallbackAdmin (what the gateway, dashboard and CLI call) wired from the same env.
 */
export class DispatcherHarness {
  private handle: CallbackAdminHandle | undefined;

  private constructor(
    readonly pki: TestPki,
    readonly receiver: TestReceiver,
    readonly stack: TestStack,
    readonly workspace: TestWorkspace,
    readonly jobs: JobClient,
    readonly callbacks: CallbackRepository,
  ) {}

  static async start(env: Record<string, string>, options: Parameters<typeof TestStack.start>[2] = {}): Promise<DispatcherHarness> {
    const pki = makeTestPki();
    const receiver = await TestReceiver.start(pki);
    const stack = await TestStack.start(['api-gateway', 'generator', 'webhook-dispatcher'], { ...baseEnv(pki), ...env }, options);
    const workspace = await stack.createWorkspace();
    return new DispatcherHarness(pki, receiver, stack, workspace, new JobClient(stack, workspace.apiKey), new CallbackRepository(stack.redis, stack.keys));
  }

  /** The callback administration the dashboard would call, built from this stack's configuration. */
  callbackAdmin() {
    this.handle ??= createCallbackAdmin(loadConfig(this.stack.env), this.stack.redis, createLogger('test', 'error'));
    return this.handle.admin;
  }

  /** The `msg_` id of a finished job's callback. */
  async messageIdOf(jobId: string): Promise<string> {
    const job = await eventually(
      async () => {
        const j = await this.stack.jobs.get(jobId);
        return j && (j.status === 'completed' || j.status === 'failed') ? j : undefined;
      },
      30_000,
      `job ${jobId} to finish`,
    );
    return callbackIdFor(job.id, eventTypeFor(job));
  }

  /**
   * Waits for the callback to reach one of `states`; returns it with its attempt log. When it does
   * not, the error carries the record and its attempts as they then were, to say why.
   */
  async settled(messageId: string, states: CallbackState[], timeoutMs = 30_000): Promise<{ callback: CallbackRecord; attempts: CallbackAttempt[] }> {
    const callback = await eventually(
      async () => {
        const cb = await this.callbacks.get(messageId);
        return cb && states.includes(cb.state) ? cb : undefined;
      },
      timeoutMs,
      `callback ${messageId} to be ${states.join(' or ')}`,
    ).catch(async (err: unknown) => {
      const [last, attempts] = await Promise.all([this.callbacks.get(messageId), this.callbacks.attempts(messageId)]);
      throw new Error(`${String(err)}\nthe callback: ${JSON.stringify(last)}\nits attempts: ${JSON.stringify(attempts)}`);
    });
    return { callback, attempts: await this.callbacks.attempts(messageId) };
  }

  /** Waits until at least `count` attempts are recorded. */
  async attempts(messageId: string, count: number, timeoutMs = 30_000): Promise<CallbackAttempt[]> {
    return eventually(
      async () => {
        const attempts = await this.callbacks.attempts(messageId);
        return attempts.length >= count ? attempts : undefined;
      },
      timeoutMs,
      `${count} attempts of ${messageId}`,
    );
  }

  /** A raw BullMQ handle on one of this stack's queues, to inspect jobs; close it after use. */
  queue(name: 'job-events' | 'callback-deliveries'): Queue {
    return new Queue(name, { connection: this.stack.redis, prefix: bullPrefix(this.stack.prefix, name) });
  }

  /** Waits until no callback attempt is waiting, delayed or running (each queued one has been handled). */
  async deliveriesSettled(timeoutMs = 20_000): Promise<void> {
    const deliveries = this.queue('callback-deliveries');
    try {
      await eventually(
        async () => (Object.values(await deliveries.getJobCounts('waiting', 'active', 'delayed', 'prioritized')).every((n) => n === 0) ? true : undefined),
        timeoutMs,
        'no callback attempt waiting or running',
      );
    } finally {
      await deliveries.close();
    }
  }

  /** Waits until the dispatcher has handled the job-finished event with this BullMQ id. */
  async eventHandled(queueJobId: string, timeoutMs = 15_000): Promise<void> {
    const events = this.queue('job-events');
    try {
      await eventually(async () => ((await (await events.getJob(queueJobId))?.isCompleted()) ? true : undefined), timeoutMs, `event ${queueJobId} handled`);
    } finally {
      await events.close();
    }
  }

  /** `npm run -s admin -- <args>` against this stack (the built CLI, without the setup step). */
  admin(args: string[]): Promise<Finished> {
    return finished(spawn(process.execPath, [resolve(ROOT, 'tools/admin/dist/main.js'), ...args], { env: this.stack.env }));
  }

  async stop(): Promise<void> {
    await this.handle?.close();
    await this.stack.stop();
    await this.receiver.stop();
    this.pki.cleanup();
  }
}
