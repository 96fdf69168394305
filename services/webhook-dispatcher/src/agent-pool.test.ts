import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { CheckedTarget } from '@media/callback-guard';
import { AgentPool, poolKey, type AgentPoolLimits } from './agent-pool';

/** The pool's bookkeeping, without connections: which agent serves which key, and when one goes. */

const target = (url: string, ...addresses: string[]): CheckedTarget => {
  const parsed = new URL(url);
  // As the guard gives it: IPv6 without brackets.
  return {
    url: parsed,
    hostname: parsed.hostname.replace(/^\[(.*)\]$/, '$1'),
    addresses: addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
  };
};

const fallback = { http: new HttpAgent(), https: new HttpsAgent() };
let clock = 0;
const pools: AgentPool[] = [];

function pool(limits: Partial<AgentPoolLimits> = {}): AgentPool {
  const created = new AgentPool(fallback, undefined, limits, () => clock);
  pools.push(created);
  return created;
}

/** Acquires and at once releases; returns the agent that served it. */
function use(p: AgentPool, t: CheckedTarget): HttpAgent {
  const lease = p.acquire(t);
  lease.release();
  return t.url.protocol === 'https:' ? lease.agents.https : lease.agents.http;
}

afterEach(() => {
  for (const p of pools.splice(0)) p.destroy();
  clock = 0;
  jest.restoreAllMocks();
});

describe('poolKey', () => {
  it('names scheme, host, effective port and the checked addresses as a set', () => {
    expect(poolKey(target('https://hooks.test/x', '192.0.2.2', '192.0.2.1'))).toBe('https:|hooks.test|443|192.0.2.1,192.0.2.2');
    expect(poolKey(target('https://hooks.test:443/y', '192.0.2.1', '192.0.2.2'))).toBe('https:|hooks.test|443|192.0.2.1,192.0.2.2');
    expect(poolKey(target('http://hooks.test/', '192.0.2.1'))).toBe('http:|hooks.test|80|192.0.2.1');
    expect(poolKey(target('https://[2001:db8::1]:8443/', '2001:db8::1'))).toBe('https:|2001:db8::1|8443|2001:db8::1');
  });
});

describe('AgentPool', () => {
  it('serves one key from one keep-alive agent of the scheme, and other keys from others', () => {
    const p = pool();
    const a = use(p, target('https://hooks.test/a', '192.0.2.1'));
    expect(a).toBeInstanceOf(HttpsAgent);
    expect((a as unknown as { keepAlive: boolean }).keepAlive).toBe(true); // set by Node, not in its typings
    expect(use(p, target('https://hooks.test/b', '192.0.2.1'))).toBe(a);
    expect(use(p, target('https://hooks.test/a', '192.0.2.2'))).not.toBe(a);
    expect(use(p, target('https://hooks.test/a', '192.0.2.1', '192.0.2.2'))).not.toBe(a);
    expect(use(p, target('https://other.test/a', '192.0.2.1'))).not.toBe(a);
    expect(use(p, target('https://hooks.test:8443/a', '192.0.2.1'))).not.toBe(a);
    const plain = use(p, target('http://hooks.test/a', '192.0.2.1'));
    expect(plain).not.toBeInstanceOf(HttpsAgent);
    expect(p.size).toBe(6);
  });

  it('fills the other scheme slot with the non-pooled fallback, never a global agent', () => {
    const lease = pool().acquire(target('https://hooks.test/', '192.0.2.1'));
    expect(lease.agents.http).toBe(fallback.http);
    lease.release();
  });

  it('keeps at most maxKeys agents, destroying the least recently used idle one', () => {
    const p = pool({ maxKeys: 2 });
    const first = use(p, target('https://one.test/', '192.0.2.1'));
    const second = use(p, target('https://two.test/', '192.0.2.2'));
    use(p, target('https://one.test/', '192.0.2.1')); // one is now the more recently used
    const destroyed = jest.spyOn(second, 'destroy');
    const firstDestroyed = jest.spyOn(first, 'destroy');
    use(p, target('https://three.test/', '192.0.2.3'));
    expect(p.size).toBe(2);
    expect(destroyed).toHaveBeenCalledTimes(1);
    expect(firstDestroyed).not.toHaveBeenCalled();
  });

  it('retires an agent still in flight past the cap, and destroys it only when its exchange ends', () => {
    const p = pool({ maxKeys: 1 });
    const busy = p.acquire(target('https://busy.test/', '192.0.2.1'));
    const destroyed = jest.spyOn(busy.agents.https, 'destroy');
    const other = use(p, target('https://other.test/', '192.0.2.2'));
    expect(destroyed).not.toHaveBeenCalled();
    expect(p.size).toBe(1);
    // Retired: the same key now gets a new agent.
    expect(use(p, target('https://busy.test/', '192.0.2.1'))).not.toBe(busy.agents.https);
    expect(other).not.toBe(busy.agents.https);
    busy.release();
    busy.release();
    expect(destroyed).toHaveBeenCalledTimes(1);
  });

  it('destroys agents idle for keyIdleMs, but not one in flight however long', () => {
    const p = pool({ keyIdleMs: 1_000 });
    const idle = use(p, target('https://idle.test/', '192.0.2.1'));
    const slow = p.acquire(target('https://slow.test/', '192.0.2.2'));
    const idleDestroyed = jest.spyOn(idle, 'destroy');
    const slowDestroyed = jest.spyOn(slow.agents.https, 'destroy');
    clock = 5_000;
    use(p, target('https://new.test/', '192.0.2.3'));
    expect(idleDestroyed).toHaveBeenCalledTimes(1);
    expect(slowDestroyed).not.toHaveBeenCalled();
    slow.release();
    // Released, it counts as used now, and goes only after another idle period.
    clock = 5_500;
    use(p, target('https://new.test/', '192.0.2.3'));
    expect(slowDestroyed).not.toHaveBeenCalled();
    clock = 7_000;
    use(p, target('https://new.test/', '192.0.2.3'));
    expect(slowDestroyed).toHaveBeenCalledTimes(1);
  });

  it('destroy() destroys every agent, retired ones in flight included', () => {
    const p = pool({ maxKeys: 1 });
    const retired = p.acquire(target('https://a.test/', '192.0.2.1'));
    const kept = use(p, target('https://b.test/', '192.0.2.2'));
    const spies = [jest.spyOn(retired.agents.https, 'destroy'), jest.spyOn(kept, 'destroy')];
    p.destroy();
    for (const spy of spies) expect(spy).toHaveBeenCalledTimes(1);
    expect(p.size).toBe(0);
    retired.release();
  });
});
