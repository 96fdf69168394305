import { adminMain } from '../../../tools/admin/src/admin';

/** What one run of the admin CLI printed, and its exit code. */
export interface AdminRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * The admin CLI's main (what tools/admin/dist/main.js runs) called in this process, with `env` as the
 * whole of its environment: what it prints on stdout and stderr, and the exit code the process ends
 * with. What only the process shows (that it exits at all, what a library prints to its stderr) needs
 * the built CLI run as a process.
 */
export async function adminInProcess(args: string[], env: NodeJS.ProcessEnv): Promise<AdminRun> {
  let stdout = '';
  let stderr = '';
  const code = await adminMain(args, {
    env,
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
  });
  return { code, stdout, stderr };
}

/**
 * The command's JSON answer, run in this process; an exit code other than 0 rejects with the run's
 * code, stdout and stderr, as execFile rejects for a process.
 */
export async function adminJson(args: string[], env: NodeJS.ProcessEnv): Promise<any> {
  const run = await adminInProcess(args, env);
  if (run.code !== 0) throw Object.assign(new Error(`admin ${args.join(' ')} exited with ${run.code}: ${run.stderr}`), run);
  return JSON.parse(run.stdout);
}
