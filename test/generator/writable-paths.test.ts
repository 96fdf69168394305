import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { finished, type Finished } from '../support/process';

// A service that cannot write where it must (its scratch directory under the OS temp directory, the
// fs blob store's MEDIA_DIR) says so at start and exits non-zero. Before, a generator with a
// read-only /tmp reported ready, made images, and failed every video with ENOENT from mkdir.
const ROOT = resolve(__dirname, '../..');
const MAIN = {
  generator: join(ROOT, 'services/generator/dist/main.js'),
  'api-gateway': join(ROOT, 'services/api-gateway/dist/main.js'),
};
const asRoot = process.getuid?.() === 0;
/** Root ignores permission bits, so a read-only directory is a read-only bind mount in a mount namespace of its own. */
const canUnshare = asRoot && spawnSync('unshare', ['-m', 'true'], { stdio: 'ignore' }).status === 0;

let work: string;
let writableTmp: string;
let writableMedia: string;
/** A regular file: no directory can be made under it, by root or anyone. */
let aFile: string;
let readOnly: string;

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'writable-paths-'));
  writableTmp = join(work, 'tmp');
  writableMedia = join(work, 'media');
  readOnly = join(work, 'read-only');
  for (const dir of [writableTmp, writableMedia, readOnly]) mkdirSync(dir);
  aFile = join(work, 'a-file');
  writeFileSync(aFile, '');
  if (!asRoot) chmodSync(readOnly, 0o555);
});

afterAll(() => {
  chmodSync(readOnly, 0o755);
  rmSync(work, { recursive: true, force: true });
});

/** Starts a service with these paths and waits for it to end (a service that starts is stopped after 15 s and counts as a failure). */
async function start(service: keyof typeof MAIN, paths: { TMPDIR: string; MEDIA_DIR: string }, readOnlyMount = false): Promise<Finished> {
  const env = {
    PATH: process.env.PATH ?? '',
    REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    KEY_PREFIX: `writable-${process.pid}`,
    OPS_PORT: '0',
    PORT: '0',
    LOG_LEVEL: 'warn',
    BLOB_STORE: 'fs',
    ...paths,
  };
  const command = readOnlyMount
    ? spawn('unshare', ['-m', 'sh', '-c', 'mount --bind "$RO" "$RO" && mount -o remount,bind,ro "$RO" && exec "$@"', 'sh', process.execPath, MAIN[service]], {
        env: { ...env, RO: readOnly },
      })
    : spawn(process.execPath, [MAIN[service]], { env });
  const timer = setTimeout(() => command.kill('SIGKILL'), 15_000);
  try {
    return await finished(command);
  } finally {
    clearTimeout(timer);
  }
}

it('a generator whose temp directory cannot hold a directory exits at start, naming it', async () => {
  const result = await start('generator', { TMPDIR: join(aFile, 'tmp'), MEDIA_DIR: writableMedia });
  expect(result.code).toBe(1);
  expect(result.stderr).toMatch(/cannot write to the scratch directory .*a-file\/tmp\/media-scratch\/.*ENOTDIR.*mount a writable volume at \/tmp/);
});

it('a generator whose MEDIA_DIR cannot be made exits at start, naming it', async () => {
  const result = await start('generator', { TMPDIR: writableTmp, MEDIA_DIR: join(aFile, 'media') });
  expect(result.code).toBe(1);
  expect(result.stderr).toMatch(/cannot write to MEDIA_DIR \(the fs blob store\) .*a-file\/media \(ENOTDIR/);
});

it('the gateway checks the same paths (uploads wait in its scratch directory)', async () => {
  const result = await start('api-gateway', { TMPDIR: join(aFile, 'tmp'), MEDIA_DIR: writableMedia });
  expect(result.code).toBe(1);
  expect(result.stderr).toMatch(/cannot write to the scratch directory/);
  const media = await start('api-gateway', { TMPDIR: writableTmp, MEDIA_DIR: join(aFile, 'media') });
  expect(media.code).toBe(1);
  expect(media.stderr).toMatch(/cannot write to MEDIA_DIR/);
});

// A read-only /tmp, as in a container whose root is read-only and has no /tmp volume.
(asRoot && !canUnshare ? it.skip : it)('a generator whose temp directory is read-only exits at start (EROFS or EACCES)', async () => {
  const result = await start('generator', { TMPDIR: readOnly, MEDIA_DIR: writableMedia }, asRoot);
  expect(result.code).toBe(1);
  expect(result.stderr).toMatch(/cannot write to the scratch directory .*read-only\/media-scratch\/.*\((EROFS|EACCES)\b/);
});
