import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cluster, Redis } from 'ioredis';
import { eventually, freePort, redisAnswers } from './basics';

/**
 * A real Redis Cluster of the test's own: three primaries on free loopback ports, each with
 * `replicas` replicas (none by default), made the way an operator makes one (`redis-server
 * --cluster-enabled yes` per node, then `redis-cli --cluster create`), so slots, MOVED
 * redirections, CROSSSLOT checks and a replica's promotion are Redis's own.
 */
export class TestRedisCluster {
  private readonly children = new Map<number, ChildProcess>();

  private constructor(
    readonly ports: number[],
    private readonly dir: string,
    private readonly replicas: number,
  ) {}

  static async start(primaries = 3, options: { replicas?: number } = {}): Promise<TestRedisCluster> {
    const replicas = options.replicas ?? 0;
    const ports: number[] = [];
    // Each port comes with its bus port (+10000) free too; the allocator never hands one out twice.
    while (ports.length < primaries * (1 + replicas)) ports.push(await freePort({ clusterBus: true }));
    const cluster = new TestRedisCluster(ports, await mkdtemp(join(tmpdir(), 'redis-cluster-')), replicas);
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

  /** Starts (or restarts, with the cluster state it kept in its directory) one node. */
  async launchNode(port: number): Promise<void> {
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
        // A replica takes over 2 s after its primary stops answering (the failover tests wait on it).
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        'nodes.conf',
        '--cluster-node-timeout',
        this.replicas > 0 ? '2000' : '3000',
        '--appendonly',
        'no',
        '--save',
        '',
      ],
      { stdio: 'ignore' },
    );
    this.children.set(port, child);
    await redisAnswers({ port }, `cluster node ${port} to answer`);
  }

  /** SIGKILLs one node, as a crashed machine would stop it. */
  async kill(port: number): Promise<void> {
    const child = this.children.get(port);
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.kill('SIGKILL');
    await exited;
  }

  /** The port of the primary that serves a key's slot now, as the live nodes' slot map says. */
  async primaryFor(key: string): Promise<number> {
    for (const port of this.ports) {
      const node = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 1, lazyConnect: true, retryStrategy: () => null });
      try {
        await node.connect();
        const slot = (await node.cluster('KEYSLOT', key)) as number;
        const range = (await node.cluster('SLOTS')).find(([from, to]) => slot >= from && slot <= to);
        if (range?.[2]) return range[2][1];
      } catch {
        // A dead node: ask the next one.
      } finally {
        node.disconnect();
      }
    }
    throw new Error(`no live node knows the primary for ${key}`);
  }

  /** `master` or `slave`, as the node itself says (INFO replication). */
  async roleOf(port: number): Promise<string> {
    const node = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 1, lazyConnect: true, retryStrategy: () => null });
    try {
      await node.connect();
      return /role:(\w+)/.exec(await node.info('replication'))?.[1] ?? 'unknown';
    } finally {
      node.disconnect();
    }
  }

  private async launch(): Promise<void> {
    for (const port of this.ports) await this.launchNode(port);
    const create = spawnSync(
      'redis-cli',
      ['--cluster', 'create', ...this.ports.map((port) => `127.0.0.1:${port}`), '--cluster-replicas', String(this.replicas), '--cluster-yes'],
      { encoding: 'utf8', timeout: 30_000 },
    );
    if (create.status !== 0) throw new Error(`redis-cli --cluster create failed: ${create.stdout}${create.stderr}`);
    const nodes = this.nodeClients();
    const known = new RegExp(`cluster_known_nodes:${this.ports.length}\\b`);
    try {
      await eventually(
        async () => {
          const infos = await Promise.all(nodes.map((node) => node.cluster('INFO') as Promise<string>));
          if (!infos.every((info) => /cluster_state:ok/.test(info) && known.test(info))) return undefined;
          if (this.replicas === 0) return true;
          // Every replica has its primary's data before a test may kill that primary.
          const roles = await Promise.all(nodes.map((node) => node.info('replication')));
          return roles.every((info) => !/role:slave/.test(info) || /master_link_status:up/.test(info)) ? true : undefined;
        },
        20_000,
        'cluster_state:ok on every node',
      );
    } finally {
      nodes.forEach((node) => node.disconnect());
    }
  }

  async destroy(): Promise<void> {
    await Promise.all([...this.children.keys()].map((port) => this.kill(port)));
    await rm(this.dir, { recursive: true, force: true });
  }
}

/**
 * A port for a cluster node: free, and with its cluster-bus port (port + 10000, Redis's fixed
 * offset) free too, which an ephemeral port from the OS (up to 60999) cannot promise.
 */
