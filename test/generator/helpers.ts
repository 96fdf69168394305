import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Queue, type Job, type JobType } from 'bullmq';
import { bullPrefix } from '@media/common';
import { jobIds } from '@media/queues';
import { MODEL_CATALOG, type VideoJob, type VideoModel } from '@media/domain';
import { defaultFfprobePath } from '@media/renderer';
import { api, eventually, TestStack, type BlobStoreKind, type TestWorkspace } from '../support/stack';

export type Call = ReturnType<typeof api>;

const ffprobePath = defaultFfprobePath();
const run = promisify(execFile);

const VIDEO_MODEL = MODEL_CATALOG.find((m) => m.id === 'motion-1') as VideoModel;

/** The catalog price, computed here from the raw catalog numbers rather than through the service's helper. */
export function expectedVideoCost(seconds: number, withAudio: boolean): number {
  return seconds * (VIDEO_MODEL.pricePerSecond + (withAudio ? VIDEO_MODEL.audioPricePerSecond : 0));
}

export interface ProbeResult {
  streams: { codec_type: string; codec_name: string; width?: number; height?: number; duration?: string }[];
  format: { duration: string; format_name: string };
}

/** Runs ffprobe over the bytes; rejects if ffprobe cannot open them. */
export async function probe(bytes: Buffer): Promise<ProbeResult> {
  const dir = await mkdtemp(join(tmpdir(), 'probe-'));
  try {
    const file = join(dir, 'video.mp4');
    await writeFile(file, bytes);
    const { stdout } = await run(ffprobePath, ['-v', 'error', '-print_format', 'json', '-show_streams', '-show_format', file]);
    return JSON.parse(stdout) as ProbeResult;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Decodes every frame; returns ffprobe's complaints (empty for a clean stream), rejects if it cannot read the file. */
export async function decodesCleanly(bytes: Buffer): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'probe-'));
  try {
    const file = join(dir, 'video.mp4');
    await writeFile(file, bytes);
    const { stderr } = await run(ffprobePath, ['-v', 'error', '-count_frames', '-show_entries', 'stream=nb_read_frames', file]);
    return stderr;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** GET with the API key, keeping the body as bytes (the `api` helper decodes it as text). */
export async function getBytes(stack: TestStack, apiKey: string, path: string): Promise<{ status: number; headers: Headers; bytes: Buffer }> {
  const res = await fetch(`${stack.baseUrl}${path}`, { headers: { authorization: `Bearer ${apiKey}` } });
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
}

/**
 * Polls GET /v1/videos/{id} as fast as `eventually` allows until the video has finished, and
 * returns every progress value seen on the way.
 */
export async function watchVideo(call: Call, id: string, timeoutMs = 30_000): Promise<{ video: any; progress: number[]; statuses: string[] }> {
  const progress: number[] = [];
  const statuses: string[] = [];
  const video = await eventually(
    async () => {
      const res = await call(`/v1/videos/${id}`);
      if (res.status !== 200) throw new Error(`GET /v1/videos/${id} answered ${res.status}: ${res.text}`);
      progress.push(res.json.progress);
      statuses.push(res.json.status);
      return res.json.status === 'completed' || res.json.status === 'failed' ? res.json : undefined;
    },
    timeoutMs,
    `video ${id} to finish`,
  );
  return { video, progress, statuses };
}

export function isNonDecreasing(values: number[]): boolean {
  return values.every((v, i) => i === 0 || v >= values[i - 1]);
}

/** A BullMQ queue handle on the stack's own queues (same prefix as the services). */
export function bullQueue(stack: TestStack, name: 'generation' | 'job-events'): Queue {
  return new Queue(name, { connection: stack.redis, prefix: bullPrefix(stack.prefix, name) });
}

const ALL_STATES: JobType[] = ['wait', 'active', 'completed', 'failed', 'delayed', 'prioritized', 'waiting-children'];

/** Every BullMQ job of the queue, in any state, whose payload names this job. */
export async function queueJobsFor(queue: Queue, jobId: string): Promise<Job[]> {
  const jobs = await queue.getJobs(ALL_STATES, 0, -1);
  return jobs.filter((j): j is Job => Boolean(j) && (j.data as { jobId?: string }).jobId === jobId);
}

/**
 * The job-finished event of a job on the durable job-events queue. It is queued just after the job
 * is marked finished, so a client can see the finished job a moment before the event exists.
 * The id comes from the job catalogue, the one place that defines it.
 */
export function finishedEvent(events: Queue, jobId: string, timeoutMs = 3_000): Promise<Job> {
  return eventually(() => events.getJob(jobIds.jobFinished(jobId)), timeoutMs, `job-events job ${jobIds.jobFinished(jobId)}`);
}

export async function chargesFor(stack: TestStack, workspaceId: string, jobId: string) {
  return (await stack.jobs.ledger(workspaceId)).filter((e) => e.job_id === jobId);
}

/** How many log lines of one service process carry this message for this job. */
export function logged(lines: Record<string, unknown>[], message: string, jobId: string): number {
  return lines.filter((l) => l.message === message && l.job_id === jobId).length;
}

/**
 * How many times these processes logged `message` for the job, once one of them has: info lines
 * reach stdout up to 20 ms after they are logged (the logger batches them), so a record already
 * written may not have its line here yet.
 */
export async function loggedOnceThere(processes: Record<string, unknown>[][], message: string, jobId: string): Promise<number> {
  const count = () => processes.reduce((n, lines) => n + logged(lines, message, jobId), 0);
  await eventually(async () => (count() > 0 ? true : undefined), 5_000, `'${message}' logged for ${jobId}`);
  return count();
}

/** `/proc/<pid>/stat` fields after the command name: state, ppid. Undefined once the process is gone. */
async function procStat(pid: number): Promise<{ comm: string; state: string; ppid: number } | undefined> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    const close = stat.lastIndexOf(')');
    const [state, ppid] = stat.slice(close + 2).split(' ');
    return { comm: stat.slice(stat.indexOf('(') + 1, close), state, ppid: Number(ppid) };
  } catch {
    return undefined;
  }
}

/** Pids of the running ffmpeg processes started by `parentPid` (Linux /proc). */
export async function ffmpegChildren(parentPid: number): Promise<number[]> {
  const pids = (await readdir('/proc')).filter((d) => /^\d+$/.test(d)).map(Number);
  const found: number[] = [];
  for (const pid of pids) {
    const stat = await procStat(pid);
    if (stat && stat.ppid === parentPid && stat.comm.startsWith('ffmpeg')) found.push(pid);
  }
  return found;
}

/** True while the process exists and is not a zombie waiting to be reaped. */
export async function isRunning(pid: number): Promise<boolean> {
  const stat = await procStat(pid);
  return stat !== undefined && stat.state !== 'Z' && stat.state !== 'X';
}

/** A gateway + generator stack with one workspace and handles on its queues, for one test file. */
export interface GeneratorStack {
  stack: TestStack;
  ws: TestWorkspace;
  call: Call;
  events: Queue;
  generation: Queue;
  close(): Promise<void>;
}

export async function startGeneratorStack(
  name: string,
  env: Record<string, string> = {},
  options: { blobStore?: BlobStoreKind } = {},
): Promise<GeneratorStack> {
  const stack = await TestStack.start(['api-gateway', 'generator'], env, options);
  const ws = await stack.createWorkspace(name);
  const events = bullQueue(stack, 'job-events');
  const generation = bullQueue(stack, 'generation');
  return {
    stack,
    ws,
    call: api(stack, ws.apiKey),
    events,
    generation,
    close: async () => {
      await events.close();
      await generation.close();
      await stack.stop();
    },
  };
}

/**
 * Starts a 1280x720 video with audio whose fixed seed makes a slow encode, and waits until the
 * generator has stored progress for it. Returns its id and the record at that moment.
 */
export async function startEncodingVideo(g: GeneratorStack, seed: number, seconds: number, size = '1280x720'): Promise<{ id: string; partial: VideoJob }> {
  const created = await g.call('/v1/videos', {
    method: 'POST',
    json: { model: 'motion-1', prompt: 'a slow paper boat', seed, seconds, size, generate_audio: true },
  });
  if (created.status !== 200) throw new Error(`video creation answered ${created.status}: ${created.text}`);
  const id: string = created.json.id;
  const partial = await eventually(
    async () => {
      const job = await g.stack.jobs.get(id);
      return job?.kind === 'video' && job.progress > 0 ? job : undefined;
    },
    15_000,
    'progress > 0 in the store',
  );
  return { id, partial };
}
