// The two pieces of state npm start keeps in its state directory beside the stack: the pid file that
// names a running launcher, and var/demo-workspace.json, which follows the store's secrets.
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WorkspaceRepository } from '@media/accounts';
import { DemoSecrets, DemoWorkspaceFile, type DemoWorkspace } from '../../tools/admin/src/demo-workspace';
import { AnotherStackRunningError, StackPidFile } from '../../tools/admin/src/stack-pid-file';

let dir = '';
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'local-stack-state-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('StackPidFile', () => {
  const root = '/repo';

  it('refuses while the recorded launcher is alive, naming its pid, directory and ports', async () => {
    const path = join(dir, 'npm-start.pid');
    await writeFile(path, JSON.stringify({ pid: 4242, root: '/other/checkout', ports: { api: 8080, receiver: 9443 }, started_at: '2026-01-01T00:00:00Z' }));
    const error = (() => {
      try {
        new StackPidFile(path, (pid) => pid === 4242).claim(root);
      } catch (err) {
        return err;
      }
    })();
    expect(error).toBeInstanceOf(AnotherStackRunningError);
    expect((error as Error).message).toBe(
      'another npm start (pid 4242) is running from /other/checkout (ports: api 8080, receiver 9443); stop it with `kill 4242` (or Ctrl-C in its terminal), then run npm start again',
    );
    // Untouched: it is the other launcher's.
    expect(JSON.parse(await readFile(path, 'utf8')).pid).toBe(4242);
  });

  it('replaces a file left by a launcher that died (SIGKILL), records the ports, and removes only its own file', async () => {
    const path = join(dir, 'npm-start.pid');
    await writeFile(path, JSON.stringify({ pid: 4242, root, ports: {}, started_at: '' }));
    const file = new StackPidFile(path, () => false);
    file.claim(root);
    file.recordPorts({ api: 8080 });
    file.recordPorts({ receiver: 9443 });
    expect(JSON.parse(await readFile(path, 'utf8'))).toMatchObject({ pid: process.pid, root, ports: { api: 8080, receiver: 9443 } });
    file.release();
    file.release();
    await expect(stat(path)).rejects.toThrow(/ENOENT/);

    // A later launcher's file is not this one's to remove.
    const stale = new StackPidFile(path, () => false);
    stale.claim(root);
    await writeFile(path, JSON.stringify({ pid: 4343, root, ports: {}, started_at: '' }));
    stale.release();
    expect(JSON.parse(await readFile(path, 'utf8')).pid).toBe(4343);
  });

  it('takes an unreadable file as no launcher', async () => {
    const path = join(dir, 'npm-start.pid');
    await writeFile(path, '{"pid": ');
    new StackPidFile(path, () => true).claim(root);
    expect(JSON.parse(await readFile(path, 'utf8')).pid).toBe(process.pid);
  });
});

describe('DemoSecrets', () => {
  const demo: DemoWorkspace = {
    workspace_id: 'ws_demo',
    api_key: 'sk_demo',
    signing_secret: 'whsec_old',
    dashboard: { url: 'http://localhost:8080/dashboard/', email: 'owner@demo.local', password: 'pw', role: 'owner' },
  };

  /** A store whose answers the test sets; `null` makes it fail as an unreachable Redis does. */
  function store() {
    const state = { secrets: ['whsec_old'] as string[] | null, reads: 0 };
    const workspaces = {
      activeSecrets: async () => {
        state.reads++;
        if (state.secrets === null) throw new Error('Connection is closed.');
        return state.secrets;
      },
    } as unknown as WorkspaceRepository;
    return { state, workspaces };
  }

  it('reads the store on every call and rewrites the file (mode 0600) once per rotation', async () => {
    const { state, workspaces } = store();
    const file = new DemoWorkspaceFile(join(dir, 'demo-workspace.json'), 'var/demo-workspace.json');
    await file.write(demo);
    const lines: string[] = [];
    const secrets = new DemoSecrets(workspaces, file, demo, (line) => lines.push(line));

    expect(await secrets.current()).toEqual(['whsec_old']);
    state.secrets = ['whsec_new', 'whsec_old'];
    expect(await Promise.all([secrets.current(), secrets.current()])).toEqual([
      ['whsec_new', 'whsec_old'],
      ['whsec_new', 'whsec_old'],
    ]);
    expect(await file.read()).toEqual({ ...demo, signing_secret: 'whsec_new' });
    expect((await stat(file.path)).mode & 0o777).toBe(0o600);
    expect(lines).toEqual(["the demo workspace's signing secret was rotated; var/demo-workspace.json now holds the new one"]);
    expect(state.reads).toBe(3);
  });

  it('keeps the last secrets while the store cannot answer, and fails only if it never answered', async () => {
    const { state, workspaces } = store();
    const file = new DemoWorkspaceFile(join(dir, 'demo-workspace.json'));
    state.secrets = null;
    const secrets = new DemoSecrets(workspaces, file, demo, () => undefined);
    await expect(secrets.current()).rejects.toThrow('Connection is closed.');
    state.secrets = ['whsec_old'];
    await secrets.current();
    state.secrets = null;
    expect(await secrets.current()).toEqual(['whsec_old']);
  });

  it('follows the store on its own, so the file changes with no delivery at all', async () => {
    const { state, workspaces } = store();
    const file = new DemoWorkspaceFile(join(dir, 'demo-workspace.json'));
    await file.write(demo);
    const secrets = new DemoSecrets(workspaces, file, demo, () => undefined);
    secrets.follow(20);
    state.secrets = ['whsec_newer'];
    const deadline = Date.now() + 5_000;
    while ((await file.read())?.signing_secret !== 'whsec_newer') {
      if (Date.now() > deadline) throw new Error('the file was not rewritten');
      await new Promise((r) => setTimeout(r, 20));
    }
    secrets.close();
  });

  it('stops asking when closed (twice is fine)', async () => {
    jest.useFakeTimers();
    try {
      const { state, workspaces } = store();
      const secrets = new DemoSecrets(workspaces, new DemoWorkspaceFile(join(dir, 'demo-workspace.json')), demo, () => undefined);
      secrets.follow(1_000);
      await jest.advanceTimersByTimeAsync(2_000);
      expect(state.reads).toBe(2);
      secrets.close();
      secrets.close();
      await jest.advanceTimersByTimeAsync(10_000);
      expect(state.reads).toBe(2);
    } finally {
      jest.useRealTimers();
    }
  });
});
