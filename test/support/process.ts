import type { ChildProcess } from 'node:child_process';
import type { Readable } from 'node:stream';

/** What a child process printed, once it has ended. */
export interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Collects a child's output until it ends (spawn it with piped stdout and stderr; stdin as the caller needs). */
export function finished(child: ChildProcess & { stdout: Readable; stderr: Readable }): Promise<Finished> {
  return new Promise((done, fail) => {
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('error', fail);
    child.once('close', (code) => done({ code, stdout, stderr }));
  });
}
