import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { removeScratchDir, scratchDir, sweepStaleScratch } from './scratch';

it('removes the scratch directories that killed processes of this host left, and keeps live ones, other hosts’ and its own', async () => {
  const own = scratchDir();
  expect(scratchDir()).toBe(own);
  const host = hostname().replace(/[^A-Za-z0-9.]/g, '_');
  expect(basename(own)).toMatch(new RegExp(`^${host.replace(/\./g, '\\.')}-${process.pid}-[0-9a-f]+$`));
  // A root of the test's own: the machine's is every process's.
  const root = await mkdtemp(join(tmpdir(), 'scratch-test-'));
  const made = (name: string) => {
    const dir = join(root, name);
    mkdirSync(dir);
    writeFileSync(join(dir, 'upload-abc'), 'left behind');
    return dir;
  };
  const id = () => randomBytes(4).toString('hex');
  // A process that has exited, as one killed outright has.
  const deadPid = Number(spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']).stdout.toString());
  const dead = made(`${host}-${deadPid}-${id()}`);
  // A container's first process has the same pid after a restart: a directory of this host under
  // this pid that is not this process's own is a dead one's.
  const samePid = made(`${host}-${process.pid}-${id()}`);
  const live = made(`${host}-${process.ppid}-${id()}`);
  const otherHost = made(`another-host-${deadPid}-${id()}`);
  try {
    expect(await sweepStaleScratch(root)).toBe(2);
    expect([dead, samePid, live, otherHost].map(existsSync)).toEqual([false, false, true, true]);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

it('makes its directory again when something removed it', async () => {
  const own = scratchDir();
  await rm(own, { recursive: true, force: true });
  expect(existsSync(scratchDir())).toBe(true);
});

it('removes its own directory, with what is in it, at a clean stop; and nothing else', async () => {
  const own = scratchDir();
  mkdirSync(join(own, 'video-abc'), { recursive: true });
  writeFileSync(join(own, 'video-abc', 'frame-0001.png'), 'left behind');
  writeFileSync(join(own, 'upload-abc'), 'left behind');
  const neighbour = join(own, '..', `${basename(own)}-neighbour`);
  mkdirSync(neighbour, { recursive: true });
  try {
    await removeScratchDir();
    expect([existsSync(own), existsSync(neighbour)]).toEqual([false, true]);
    // Twice is fine: a shutdown path may reach it after another.
    await removeScratchDir();
  } finally {
    await rm(neighbour, { recursive: true, force: true });
  }
});
