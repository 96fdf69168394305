// `npm start` is stopped by a signal to whichever of its processes a developer (or a tool) picks:
// npm itself (Ctrl-C reaches it, and so does `kill` on the pid a process list shows first), the
// launcher, or the launcher dying outright. Each time, nothing of the stack may be left running or
// holding a port: not the launcher, the services, nor the redis-server it started.
import { eventually } from '../support/stack';
import { isFree, NpmStartStack, processTree, stillRunning, type ProcessEntry } from '../readme/support/npm-start';

/**
 * Long enough for every service to drain, on a machine busy with the rest of the suite (a tethered
 * service whose Redis went down with the launcher may wait out its own shutdown deadline); the point
 * is that it happens at all, not how fast.
 */
const GONE_WITHIN_MS = 75_000;

async function freePorts(ports: number[]): Promise<number[]> {
  const free = await Promise.all(ports.map(isFree));
  return ports.filter((_, i) => !free[i]);
}

describe.each([
  ['SIGTERM', 'npm'],
  ['SIGINT', 'npm'],
  ['SIGTERM', 'launcher'],
  ['SIGKILL', 'launcher'],
] as const)('%s to %s', (signal, target) => {
  const stack = new NpmStartStack({ via: 'npm', ownRedis: true });
  let tree: ProcessEntry[] = [];

  afterAll(async () => {
    // Only if the test failed: what it started must not outlive it (the same pid and command, not a reused pid).
    for (const p of stillRunning(tree.map((t) => t.pid))) {
      if (tree.some((t) => t.pid === p.pid && t.command === p.command)) process.kill(p.pid, 'SIGKILL');
    }
    await stack.stop();
  }, 60_000);

  it('leaves no process of the stack running and every port free', async () => {
    await stack.start();
    tree = processTree(stack.pid);
    const launcher = stack.launcherPid;
    const ports = [stack.port, stack.opsPort, stack.opsPort + 1, stack.opsPort + 2, stack.receiverPort, stack.redisPort];

    // What there is to stop: npm, the launcher, three services and redis-server (each tethered).
    const has = (pattern: RegExp) => tree.filter((p) => pattern.test(p.command)).length;
    expect({
      launcher: has(/^node tools\/admin\/dist\/local-stack\.js$/),
      services: has(/tether\.js \S+services\/(api-gateway|generator|webhook-dispatcher)\/dist\/main\.js$/),
      redis: has(/^redis-server 127\.0\.0\.1:\d+/),
    }).toEqual({ launcher: 1, services: 3, redis: 1 });
    expect(await freePorts(ports)).toEqual(ports);

    process.kill(target === 'npm' ? stack.pid : launcher, signal);

    await eventually(
      async () => (stillRunning(tree.map((p) => p.pid)).length === 0 && (await freePorts(ports)).length === 0 ? true : undefined),
      GONE_WITHIN_MS,
      'every process of the stack to exit and every port to be free',
    ).catch((err) => {
      const left = stillRunning(tree.map((p) => p.pid)).map((p) => `${p.pid} ${p.command}`);
      throw new Error(`${String(err)}\nstill running:\n${left.join('\n')}\nlauncher printed:\n${stack.launcherLines}\n${stack.stderr}`);
    });
  }, 150_000);
});
