import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { FollowingSentinelConnector } from '@media/common';
import { eventually, freePort, redisAnswers } from './basics';
import { TcpProxy } from './tcp-proxy';

/** The name the Sentinels monitor the primary under (`REDIS_SENTINEL_NAME`). */
export const SENTINEL_NAME = 'media-primary';
/** The data nodes' password (`REDIS_PASSWORD`), as production Redis has one; the Sentinels have none. */
export const NODE_PASSWORD = 'sentinel-test-node-password';

export interface SentinelSetOptions {
  /** Replicas of the primary (1 unless given). */
  replicas?: number;
  /**
   * Every data node behind a TCP proxy of its own, whose port is the node's address for everyone
   * (the node announces it; Sentinels, replicas and clients dial it), so that {@link
   * TestRedisSentinel.cut} can cut a node off the network while it runs.
   */
  proxied?: boolean;
}

/**
 * Redis with automatic failover, as a platform team runs it, on loopback and of the test's own: a
 * primary, a replica of it (or more), and three Sentinels (quorum 2) that promote a replica when the
 * primary stops answering. Every node writes an append-only file, so a killed primary can come back
 * on its port and data, where the Sentinels make it a replica of the one they promoted.
 */
export class TestRedisSentinel {
  private readonly nodes = new Map<number, ChildProcess>();
  private readonly sentinelChildren: ChildProcess[] = [];
  /** With {@link SentinelSetOptions.proxied}: each node's proxy, by the node's address (its port). */
  private readonly proxies = new Map<number, TcpProxy>();
  /** The port each node's process listens on, by the node's address (the same port unless proxied). */
  private readonly serverPorts = new Map<number, number>();

  private constructor(
    /** The data nodes' addresses (ports on 127.0.0.1); the first starts as the primary. */
    readonly dataPorts: number[],
    readonly sentinelPorts: number[],
    private readonly dir: string,
  ) {}

  static async start(options: SentinelSetOptions = {}): Promise<TestRedisSentinel> {
    const dataNodes = 1 + (options.replicas ?? 1);
    const ports: number[] = [];
    // Proxied, each node has a second port: the one its process listens on behind its proxy.
    while (ports.length < dataNodes * (options.proxied ? 2 : 1) + 3) {
      const port = await freePort();
      if (!ports.includes(port)) ports.push(port);
    }
    const set = new TestRedisSentinel(ports.slice(0, dataNodes), ports.slice(dataNodes, dataNodes + 3), await mkdtemp(join(tmpdir(), 'redis-sentinel-')));
    for (const [i, port] of set.dataPorts.entries()) set.serverPorts.set(port, options.proxied ? ports[dataNodes + 3 + i]! : port);
    try {
      if (options.proxied) {
        for (const port of set.dataPorts) set.proxies.set(port, await TcpProxy.start(set.serverPorts.get(port)!, port));
      }
      await set.launch();
    } catch (err) {
      await set.destroy();
      throw err;
    }
    return set;
  }

  /** `REDIS_SENTINELS` and `REDIS_SENTINEL_NAME` for the services. */
  get env(): Record<string, string> {
    return {
      REDIS_SENTINELS: this.sentinelPorts.map((port) => `127.0.0.1:${port}`).join(','),
      REDIS_SENTINEL_NAME: SENTINEL_NAME,
      REDIS_PASSWORD: NODE_PASSWORD,
    };
  }

  /** The tests' own handle on the primary, found through the Sentinels as the services find it. */
  client(): Redis {
    return new Redis({
      sentinels: this.sentinelPorts.map((port) => ({ host: '127.0.0.1', port })),
      name: SENTINEL_NAME,
      password: NODE_PASSWORD,
      maxRetriesPerRequest: null,
      Connector: FollowingSentinelConnector,
    });
  }

  /** A plain connection to one data node (past its proxy, if it has one: it answers during a cut). */
  node(port: number): Redis {
    const node = new Redis(this.serverPorts.get(port) ?? port, '127.0.0.1', { password: NODE_PASSWORD, maxRetriesPerRequest: 1 });
    // A node killed under it fails its command, which says so.
    node.on('error', () => undefined);
    return node;
  }

  /** Asks the Sentinels to promote a replica now (`SENTINEL FAILOVER`), as an operator does. */
  async failover(): Promise<void> {
    const sentinel = new Redis(this.sentinelPorts[0], '127.0.0.1', { maxRetriesPerRequest: 1 });
    try {
      await sentinel.call('SENTINEL', 'FAILOVER', SENTINEL_NAME);
    } finally {
      sentinel.disconnect();
    }
  }

  /** Cuts a proxied node off the network (see {@link TcpProxy.cut}): it runs, and nobody reaches it. */
  cut(port: number): void {
    this.proxyOf(port).cut();
  }

  heal(port: number): void {
    this.proxyOf(port).heal();
  }

  private proxyOf(port: number): TcpProxy {
    const proxy = this.proxies.get(port);
    if (!proxy) throw new Error(`node ${port} has no proxy: start the set with { proxied: true }`);
    return proxy;
  }

  /** The port of the primary, as the Sentinels see it now. */
  async primaryPort(): Promise<number> {
    const sentinel = new Redis(this.sentinelPorts[0], '127.0.0.1', { maxRetriesPerRequest: 1 });
    try {
      const [, port] = (await sentinel.call('SENTINEL', 'get-master-addr-by-name', SENTINEL_NAME)) as [string, string];
      return Number(port);
    } finally {
      sentinel.disconnect();
    }
  }

  /**
   * Cuts a replica off its primary while both keep running: it can no longer authenticate, so it
   * stays disconnected while the primary goes on acknowledging writes that it will never have. A
   * promotion afterwards loses them, as one after a replica fell behind does.
   */
  async cutReplication(replicaPort: number): Promise<void> {
    const node = this.node(replicaPort);
    try {
      await node.config('SET', 'masterauth', 'not-the-password');
      await node.client('KILL', 'TYPE', 'master');
    } finally {
      node.disconnect();
    }
  }

  /** Gives a replica cut off by {@link cutReplication} the right password again. */
  async restoreReplication(replicaPort: number): Promise<void> {
    const node = this.node(replicaPort);
    try {
      await node.config('SET', 'masterauth', NODE_PASSWORD);
    } finally {
      node.disconnect();
    }
  }

  /** A crash of the node on this port: SIGKILL. */
  async kill(port: number): Promise<void> {
    const child = this.nodes.get(port);
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.kill('SIGKILL');
    await exited;
  }

  /**
   * A node that hangs without closing anything (SIGSTOP): its connections stay open and unanswered,
   * as behind a network partition or a stalled VM, until {@link resume}.
   */
  pause(port: number): void {
    this.nodes.get(port)?.kill('SIGSTOP');
  }

  resume(port: number): void {
    this.nodes.get(port)?.kill('SIGCONT');
  }

  /** Starts a data node (again) on its address and directory; the first run of a replica replicates `replicaOf`. */
  async launchNode(port: number, replicaOf?: number): Promise<void> {
    const dir = join(this.dir, String(port));
    await mkdir(dir, { recursive: true });
    const serverPort = this.serverPorts.get(port) ?? port;
    // masterauth too: a node made a replica (the first one, or an old primary after a failover) authenticates to its primary.
    const args = [
      '--port',
      String(serverPort),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      '--appendonly',
      'yes',
      '--save',
      '',
      '--requirepass',
      NODE_PASSWORD,
      '--masterauth',
      NODE_PASSWORD,
    ];
    // Behind a proxy the node gives the proxy's port as its own, so the Sentinels name that.
    if (serverPort !== port) args.push('--replica-announce-ip', '127.0.0.1', '--replica-announce-port', String(port));
    if (replicaOf !== undefined) args.push('--replicaof', '127.0.0.1', String(replicaOf));
    this.nodes.set(port, spawn('redis-server', args, { stdio: 'ignore' }));
    await redisAnswers({ url: `redis://:${NODE_PASSWORD}@127.0.0.1:${serverPort}` }, `redis node ${port} to answer`);
  }

  /** Which node each Sentinel names as primary, and each data node's own role: what a failed failover test reports. */
  async describe(): Promise<string> {
    const named = await Promise.all(
      this.sentinelPorts.map(async (port) => {
        const sentinel = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 1, lazyConnect: true });
        sentinel.on('error', () => undefined);
        try {
          const [, primary] = (await sentinel.call('SENTINEL', 'get-master-addr-by-name', SENTINEL_NAME)) as [string, string];
          return `sentinel ${port} names ${primary}`;
        } catch (err) {
          return `sentinel ${port}: ${String(err)}`;
        } finally {
          sentinel.disconnect();
        }
      }),
    );
    const roles = await Promise.all(this.dataPorts.map(async (port) => `${port} ${await this.roleOf(port).catch((err: unknown) => String(err))}`));
    return `${named.join(', ')}; nodes: ${roles.join(', ')}`;
  }

  /** The role (`master` or `slave`) the node on this port says it has. */
  async roleOf(port: number): Promise<string> {
    const node = this.node(port);
    try {
      return /role:(\w+)/.exec(await node.info('replication'))?.[1] ?? 'unknown';
    } finally {
      node.disconnect();
    }
  }

  /** True when the node on this port is a replica whose link to its primary is up. */
  async replicating(port: number): Promise<boolean> {
    const node = this.node(port);
    try {
      const info = await node.info('replication');
      return /role:slave/.test(info) && /master_link_status:up/.test(info);
    } finally {
      node.disconnect();
    }
  }

  private async launch(): Promise<void> {
    const [primary, ...replicas] = this.dataPorts as [number, ...number[]];
    await this.launchNode(primary);
    for (const replica of replicas) await this.launchNode(replica, primary);
    for (const port of this.sentinelPorts) {
      const dir = join(this.dir, `sentinel-${port}`);
      await mkdir(dir, { recursive: true });
      const conf = join(dir, 'sentinel.conf');
      // Sentinel rewrites its file as it learns the set; it must be its own and writable.
      await writeFile(
        conf,
        [
          `port ${port}`,
          'bind 127.0.0.1',
          `dir ${dir}`,
          `sentinel monitor ${SENTINEL_NAME} 127.0.0.1 ${primary} 2`,
          `sentinel auth-pass ${SENTINEL_NAME} ${NODE_PASSWORD}`,
          `sentinel down-after-milliseconds ${SENTINEL_NAME} 1000`,
          `sentinel failover-timeout ${SENTINEL_NAME} 5000`,
          `sentinel parallel-syncs ${SENTINEL_NAME} 1`,
          '',
        ].join('\n'),
      );
      this.sentinelChildren.push(spawn('redis-server', [conf, '--sentinel'], { stdio: 'ignore' }));
    }
    for (const port of this.sentinelPorts) await redisAnswers({ port }, `sentinel ${port} to answer`);
    // Ready once every Sentinel knows the replica and the other Sentinels (they find each other
    // through the primary), so that a failover can reach its quorum.
    await eventually(
      async () => {
        for (const port of this.sentinelPorts) {
          const sentinel = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 1 });
          try {
            const master = (await sentinel.call('SENTINEL', 'master', SENTINEL_NAME)) as string[];
            const field = (name: string) => Number(master[master.indexOf(name) + 1]);
            if (field('num-slaves') < replicas.length || field('num-other-sentinels') < 2) return undefined;
          } finally {
            sentinel.disconnect();
          }
        }
        return true;
      },
      30_000,
      'every Sentinel to know the replica and the other Sentinels',
    );
  }

  async destroy(): Promise<void> {
    const children = [...this.nodes.values(), ...this.sentinelChildren];
    await Promise.all(
      children.map(async (child) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = once(child, 'exit');
        child.kill('SIGKILL');
        await exited;
      }),
    );
    await Promise.all([...this.proxies.values()].map((proxy) => proxy.close()));
    await rm(this.dir, { recursive: true, force: true });
  }
}
