import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { scratchDir, sweepStaleScratch } from './scratch';

it('removes the scratch directories that killed processes left, and keeps those of live ones and its own', async () => {
  const own = scratchDir();
  expect(scratchDir()).toBe(own);
  writeFileSync(join(own, 'upload-in-flight'), 'x');
  const root = dirname(own);
  const made = (pid: number | string) => {
    const dir = join(root, `${pid}-${randomBytes(4).toString('hex')}`);
    mkdirSync(dir);
    writeFileSync(join(dir, 'upload-abc'), 'left behind');
    return dir;
  };
  // A process that has exited, as one killed outright has.
  const deadPid = Number(spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']).stdout.toString());
  const dead = made(deadPid);
  // A container's first process has the same pid after a restart: a directory under this pid that is
  // not this process's own is a dead one's.
  const samePid = made(process.pid);
  const live = made(process.ppid);
  try {
    expect(await sweepStaleScratch()).toBeGreaterThanOrEqual(2);
    expect([existsSync(dead), existsSync(samePid), existsSync(live), existsSync(join(own, 'upload-in-flight'))]).toEqual([false, false, true, true]);
  } finally {
    await rm(live, { recursive: true, force: true });
  }
});
