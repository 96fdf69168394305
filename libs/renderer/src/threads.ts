import { availableParallelism } from 'node:os';
import sharp from 'sharp';

/**
 * The threads one job's encoder and image operations may use: the CPUs this process may run on,
 * shared by the jobs it runs at once. ffmpeg and libvips otherwise size their pools by the machine's
 * cores, not the container's CPU limit (which Node reads from the cgroup): in a pod limited to 2 CPUs
 * on a 64-core node, two encodes of dozens of threads each are throttled and hold dozens of frame
 * buffers, for no gain.
 */
export function threadsPerJob(concurrency: number, cpus = availableParallelism()): number {
  return Math.max(1, Math.floor(cpus / Math.max(1, concurrency)));
}

/** libvips's threads per image operation, for the whole process (sharp has one pool). */
export function limitImageThreads(threads: number): void {
  sharp.concurrency(threads);
}
