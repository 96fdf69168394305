import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { api, eventually, TestStack, type ServiceProcess, type TestWorkspace } from '../support/stack';

/**
 * A service that stops cleanly (SIGTERM from Kubernetes, Ctrl-C under `npm start`) removes its own
 * scratch directory, so the next start has nothing to sweep: the sweep, and its log line, are for
 * processes that were killed. Each service gets a temp directory of this test's own (TMPDIR), so
 * what other tests' killed processes leave is not in the way.
 */
const SWEPT = 'removed the temporary files of processes that were killed';

let stack: TestStack;
let ws: TestWorkspace;
let temp: string;

beforeAll(async () => {
  temp = await mkdtemp(join(tmpdir(), 'scratch-shutdown-'));
  stack = await TestStack.start(['api-gateway', 'generator'], { TMPDIR: temp });
  ws = await stack.createWorkspace('scratch');
});

afterAll(async () => {
  await stack?.stop();
  if (temp) await rm(temp, { recursive: true, force: true });
});

const scratchRoot = () => join(temp, 'media-scratch');

/** The scratch directory of a running service (`<host>-<pid>-<random>`), which it makes at start-up. */
async function scratchOf(service: ServiceProcess): Promise<string> {
  const names = await readdir(scratchRoot());
  const own = names.filter((name) => name.includes(`-${service.pid}-`));
  expect(own).toHaveLength(1);
  return join(scratchRoot(), own[0]);
}

/** An image edit (its upload goes through the gateway's scratch) and a video (encoded in the generator's). */
async function useScratch(): Promise<void> {
  const call = api(stack, ws.apiKey);
  const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');
  const form = new FormData();
  form.set('prompt', 'bluer');
  form.set('size', '256x256');
  form.set('image', new Blob([png], { type: 'image/png' }), 'in.png');
  expect((await call('/v1/images/edits', { method: 'POST', body: form })).status).toBe(200);
  const video = await call('/v1/videos', { method: 'POST', json: { model: 'motion-1', prompt: 'waves', seconds: 1, size: '640x360' } });
  expect(video.status).toBe(200);
  await eventually(async () => ((await stack.jobs.get(video.json.id))?.status === 'completed' ? true : undefined), 30_000, 'the video to be made');
}

it.each([
  ['SIGTERM', 'SIGTERM'],
  ['SIGINT', 'SIGINT'],
] as const)('removes its scratch directory on %s, and the next start finds nothing to sweep', async (_name, signal) => {
  const services = [stack.service('api-gateway'), stack.service('generator')];
  await useScratch();
  const dirs = await Promise.all(services.map(scratchOf));
  // What a request or an encode cut short would leave: files, and a directory with files in it.
  for (const dir of dirs) {
    await writeFile(join(dir, 'upload-left-over'), 'x');
    await mkdir(join(dir, 'video-left-over'));
    await writeFile(join(dir, 'video-left-over', 'frame-0001.png'), 'y');
  }

  expect(await Promise.all(services.map((s) => s.kill(signal)))).toEqual([0, 0]);
  for (const service of services) expect(service.lines.at(-1)?.message).toBe('stopped');
  expect(dirs.filter((dir) => existsSync(dir))).toEqual([]);
  expect(await readdir(scratchRoot())).toEqual([]);

  const next = await Promise.all([stack.startService('api-gateway'), stack.startService('generator')]);
  // The start-up lines are in by the time the process says it is up; the sweep logs before that.
  for (const service of next) expect(service.lines.filter((l) => l.message === SWEPT)).toEqual([]);
  expect(await Promise.all(next.map(scratchOf))).toHaveLength(2);
});

it('still sweeps what a killed process left, at the next start', async () => {
  const killed = stack.service('generator');
  const dir = await scratchOf(killed);
  await killed.kill('SIGKILL');
  expect(existsSync(dir)).toBe(true);
  const next = await stack.startService('generator');
  expect(next.lines.filter((l) => l.message === SWEPT)).toEqual([expect.objectContaining({ directories: 1 })]);
  expect(existsSync(dir)).toBe(false);
});
