import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { performance } from 'node:perf_hooks';
import type { SecureContext } from 'node:tls';
import type { CheckedTarget } from '@media/callback-guard';
import { TunnelHttpAgent, TunnelHttpsAgent, type EgressProxy } from './egress-proxy';

/** How many keep-alive connections are kept, and for how long. */
export interface AgentPoolLimits {
  /** A pooled socket idle this long is closed. */
  socketIdleMs: number;
  /** Idle sockets kept per pool key; a socket freed beyond that is closed. */
  maxIdleSocketsPerKey: number;
  /** Pool keys (agents) kept at most. */
  maxKeys: number;
  /** An agent with nothing in flight for this long is destroyed, with its TLS sessions. */
  keyIdleMs: number;
}

export const DEFAULT_AGENT_POOL_LIMITS: Readonly<AgentPoolLimits> = {
  // Below the shortest keep-alive timeout common servers use (Node and Apache: 5 s), so a reused
  // socket is rarely one the server is closing at that moment; the sender retries the rare one.
  socketIdleMs: 4_000,
  // Small, for senders that do not know their concurrency; the dispatcher sizes it to its own
  // (see wiring). The idle timeout and LIFO reuse shrink a pool again once its stream slows down.
  maxIdleSocketsPerKey: 16,
  maxKeys: 512,
  // Common TLS session lifetimes (nginx ssl_session_timeout, Node's sessionTimeout) are 5 minutes;
  // an agent kept longer would mostly offer sessions the server no longer accepts.
  keyIdleMs: 300_000,
};

/** The agents got should use for one exchange, one per scheme (got picks by the URL's). */
export interface AgentLease {
  readonly agents: { http: HttpAgent; https: HttpsAgent };
  /** Ends this exchange's use of the agent; call once, after the exchange settled. */
  release(): void;
}

interface Entry {
  readonly key: string;
  readonly agent: HttpAgent;
  inFlight: number;
  lastUsedMs: number;
  /** Dropped from the map while in use: destroyed when its last exchange releases it. */
  retired: boolean;
}

/**
 * Keep-alive agents keyed by where a connection really goes: scheme, host name (SNI and
 * certificate name), port and the exact set of addresses the guard checked for the attempt.
 *
 * Why not one shared agent: Node names its pool `host:port`, so after DNS changed an attempt
 * checked against the new addresses would be handed a socket opened to an old one (DNS rebinding
 * through the pool). Keyed by the checked set, a reused socket can only go to an address checked
 * for this very attempt. The CA and other TLS settings are the same for every agent of one sender
 * (one secure context), so they need not be part of the key.
 *
 * Every agent dials through the lookup that the request carries, which is always the pinned lookup
 * of the attempt's checked target; the lookup is not set on the agent because the sender wraps it
 * per attempt to record the address dialled even when the connection then fails.
 */
export class AgentPool {
  /** In order of last use, oldest first (a Map keeps insertion order; a use re-inserts). */
  readonly #entries = new Map<string, Entry>();
  readonly #retired = new Set<Entry>();
  readonly #limits: AgentPoolLimits;
  readonly #secureContext: SecureContext | undefined;
  readonly #clock: () => number;
  readonly #proxy: EgressProxy | undefined;
  /** Non-pooled agents for the unused scheme slot of a lease. */
  readonly #fallback: { http: HttpAgent; https: HttpsAgent };

  /**
   * @param fallback - agents (without keep-alive) to fill the lease's other scheme slot, so got
   *   never falls back to a process-wide agent
   * @param clock - a monotonic clock in ms; tests pass their own
   */
  constructor(
    fallback: { http: HttpAgent; https: HttpsAgent },
    secureContext: SecureContext | undefined,
    limits: Partial<AgentPoolLimits> = {},
    clock: () => number = () => performance.now(),
    proxy?: EgressProxy,
  ) {
    this.#proxy = proxy;
    this.#fallback = fallback;
    this.#secureContext = secureContext;
    this.#limits = { ...DEFAULT_AGENT_POOL_LIMITS, ...limits };
    this.#clock = clock;
  }

  /** Number of agents kept for reuse (retired ones still in flight not counted). */
  get size(): number {
    return this.#entries.size;
  }

  /** The agent for `target`'s pool key, held in use until the lease is released. */
  acquire(target: CheckedTarget): AgentLease {
    const key = poolKey(target);
    const now = this.#clock();
    let entry = this.#entries.get(key);
    if (entry) {
      this.#entries.delete(key);
    } else {
      entry = { key, agent: this.#createAgent(target.url.protocol), inFlight: 0, lastUsedMs: now, retired: false };
    }
    entry.inFlight++;
    entry.lastUsedMs = now;
    this.#entries.set(key, entry);
    this.#sweep(now);

    const held = entry;
    let released = false;
    const agents =
      target.url.protocol === 'https:' ? { http: this.#fallback.http, https: held.agent as HttpsAgent } : { http: held.agent, https: this.#fallback.https };
    return {
      agents,
      release: () => {
        if (released) return;
        released = true;
        held.inFlight--;
        held.lastUsedMs = this.#clock();
        if (held.retired) {
          if (held.inFlight === 0) {
            this.#retired.delete(held);
            held.agent.destroy();
          }
          return;
        }
        // Re-inserted so the map stays ordered by last use and the sweep can stop early.
        this.#entries.delete(held.key);
        this.#entries.set(held.key, held);
      },
    };
  }

  /** Destroys every agent and its sockets, in flight or idle. The pool stays usable. */
  destroy(): void {
    for (const entry of this.#entries.values()) entry.agent.destroy();
    for (const entry of this.#retired) entry.agent.destroy();
    this.#entries.clear();
    this.#retired.clear();
  }

  #createAgent(protocol: string): HttpAgent {
    const options = {
      keepAlive: true,
      // No per-key cap on sockets in use: a cap would queue attempts inside the agent behind a slow
      // receiver's own hung ones, spending their deadline there. The dispatcher's concurrency
      // already bounds sockets in use, and no limit is shared between keys (no maxTotalSockets),
      // so a slow or dead receiver never holds sockets another receiver's attempt has to wait for.
      maxFreeSockets: this.#limits.maxIdleSocketsPerKey,
      // The most recently used socket first, so under light load the others go idle and time out
      // instead of being kept warm in turn.
      scheduling: 'lifo' as const,
      // Only acts on idle sockets here (Node's agent destroys a free socket on timeout; for one in
      // use the request merely emits 'timeout', which got ignores: its own deadline applies).
      timeout: this.#limits.socketIdleMs,
    };
    if (protocol !== 'https:') return this.#proxy ? new TunnelHttpAgent(this.#proxy, options) : new HttpAgent(options);
    const https = {
      ...options,
      // A new connection to the same key (after an idle close, or beside a busy one) resumes the
      // TLS session instead of a full handshake; Node keeps the sessions per agent.
      maxCachedSessions: 8,
      ...(this.#secureContext ? { secureContext: this.#secureContext } : {}),
    };
    return this.#proxy ? new TunnelHttpsAgent(this.#proxy, https) : new HttpsAgent(https);
  }

  /**
   * Drops agents unused for keyIdleMs, and the least recently used beyond maxKeys. An agent still
   * in flight is not destroyed under its exchange: past the cap it is retired (no new use) and
   * destroyed when released; merely idle-aged it stays, as its use is not over.
   */
  #sweep(now: number): void {
    for (const entry of this.#entries.values()) {
      const overCap = this.#entries.size > this.#limits.maxKeys;
      const expired = now - entry.lastUsedMs >= this.#limits.keyIdleMs;
      // Entries are in order of last use, so nothing after a fresh one has expired.
      if (!overCap && !expired) return;
      if (entry.inFlight > 0 && !overCap) continue;
      this.#entries.delete(entry.key);
      if (entry.inFlight > 0) {
        entry.retired = true;
        this.#retired.add(entry);
      } else {
        entry.agent.destroy();
      }
    }
  }
}

/**
 * What decides whether a pooled connection may serve an attempt: scheme, host name (SNI, the
 * certificate's name), port and the checked addresses as a set (sorted: the resolver's order may
 * change between answers without changing where connections may go).
 */
export function poolKey(target: CheckedTarget): string {
  const { protocol, port } = target.url;
  const effectivePort = port !== '' ? port : protocol === 'https:' ? '443' : '80';
  const addresses = target.addresses.map(({ address }) => address).sort();
  return `${protocol}|${target.hostname}|${effectivePort}|${addresses.join(',')}`;
}
