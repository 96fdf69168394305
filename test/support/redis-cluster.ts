import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { Cluster, Redis } from 'ioredis';
import { eventually, redisAnswers } from './basics';

/**
 * A real Redis Cluster of the test's own: three primaries (no replicas) on free loopback ports,
 * made the way an operator makes one (`redis-server --cluster-enabled yes` per node, then
 * `redis-cli --cluster create`), so slots, MOVED redirections and CROSSSLOT checks are Redis's own.
 */
export class TestRedisCluster {
  private readonly children: ChildProcess[] = [];

  private constructor(
    readonly ports: number[],
    private readonly dir: string,
  ) {}

  static async start(primaries = 3): Promise<TestRedisCluster> {
    const ports: number[] = [];
    while (ports.length < primaries) {
      const port = await clusterPort();
      if (!ports.some((p) => p === port || Math.abs(p - port) === 10_000)) ports.push(port);
    }
    const cluster = new TestRedisCluster(ports, await mkdtemp(join(tmpdir(), 'redis-cluster-')));
    try {
      await cluster.launch();
    } catch (err) {
      await cluster.destroy();
      throw err;
    }
    return cluster;
  }

  /** `REDIS_CLUSTER_NODES` for the services. */
  get nodes(): string {
    return this.ports.map((port) => `127.0.0.1:${port}`).join(',');
  }

  /** A cluster client as the tests' own handle (BullMQ-compatible: no retry limit per request). */
  client(): Redis {
    const cluster = new Cluster(
      this.ports.map((port) => ({ host: '127.0.0.1', port })),
      { redisOptions: { maxRetriesPerRequest: null } },
    );
    return cluster as unknown as Redis;
  }

  /** Every node's own connection (keys are spread over them: SCAN one node at a time). */
  nodeClients(): Redis[] {
    return this.ports.map((port) => new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 1 }));
  }

  private async launch(): Promise<void> {
    for (const port of this.ports) {
      const dir = join(this.dir, String(port));
      await mkdir(dir, { recursive: true });
      const child = spawn(
        'redis-server',
        [
          '--port',
          String(port),
          '--bind',
          '127.0.0.1',
          '--dir',
          dir,
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          'nodes.conf',
          '--cluster-node-timeout',
          '3000',
          '--appendonly',
          'no',
          '--save',
          '',
        ],
        { stdio: 'ignore' },
      );
      this.children.push(child);
    }
    for (const port of this.ports) {
      await redisAnswers({ port }, `cluster node ${port} to answer`);
    }
    const create = spawnSync(
      'redis-cli',
      ['--cluster', 'create', ...this.ports.map((port) => `127.0.0.1:${port}`), '--cluster-replicas', '0', '--cluster-yes'],
      { encoding: 'utf8', timeout: 30_000 },
    );
    if (create.status !== 0) throw new Error(`redis-cli --cluster create failed: ${create.stdout}${create.stderr}`);
    const nodes = this.nodeClients();
    try {
      await eventually(
        async () => {
          const infos = await Promise.all(nodes.map((node) => node.cluster('INFO') as Promise<string>));
          return infos.every((info) => /cluster_state:ok/.test(info) && /cluster_known_nodes:3/.test(info)) ? true : undefined;
        },
        20_000,
        'cluster_state:ok on every node',
      );
    } finally {
      nodes.forEach((node) => node.disconnect());
    }
  }

  async destroy(): Promise<void> {
    await Promise.all(
      this.children.map(async (child) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = once(child, 'exit');
        child.kill('SIGKILL');
        await exited;
      }),
    );
    await rm(this.dir, { recursive: true, force: true });
  }
}

/**
 * A port for a cluster node: free, and with its cluster-bus port (port + 10000, Redis's fixed
 * offset) free too, which an ephemeral port from the OS (up to 60999) cannot promise.
 */
async function clusterPort(): Promise<number> {
  for (let tries = 0; tries < 200; tries++) {
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    if ((await canBind(port)) && (await canBind(port + 10_000))) return port;
  }
  throw new Error('no free port pair for a cluster node');
}

function canBind(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}
