/**
 * How `npm start` runs each process of its stack so that none outlives the launcher, however the
 * launcher ends (a signal it handles, or a SIGKILL it cannot see coming):
 *
 *   node tether.js <program.js> [args…]        a Node program, run in this very process
 *   node tether.js --exec <command> [args…]    any other program (redis-server), run as a child
 *
 * The launcher spawns this with an IPC channel (`stdio: [… , 'ipc']`). The kernel closes the
 * launcher's end of it when the launcher dies for any reason, so `disconnect` arrives at once: no
 * polling, and nothing to get wrong when the launcher's pid is reused or the process is re-parented
 * to a subreaper rather than to pid 1 (what a `process.ppid` check would have to guess at). The
 * tethered process then gets SIGTERM, so a service drains exactly as it does when stopped by hand.
 */
import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [mode, ...rest] = process.argv.slice(2);

if (!process.channel) {
  console.error('tether.js is started by npm start (tools/admin/dist/local-stack.js) with an IPC channel');
  process.exit(2);
}
// The channel only watches the launcher: it must not keep a process alive that has finished.
process.channel.unref();

if (mode === '--exec') {
  const [command, ...args] = rest;
  if (!command) {
    console.error('usage: node tether.js --exec <command> [args…]');
    process.exit(2);
  }
  const child = spawn(command, args, { stdio: 'inherit' });
  const pass = (signal: NodeJS.Signals) => () => child.kill(signal);
  process.on('SIGTERM', pass('SIGTERM'));
  process.on('SIGINT', pass('SIGINT'));
  process.once('disconnect', pass('SIGTERM'));
  child.once('error', (err) => {
    console.error(`${command}: ${err.message}`);
    process.exit(127);
  });
  child.once('exit', (code, signal) => process.exit(code ?? 128 + (signal ? constants.signals[signal] : 0)));
} else if (mode) {
  process.once('disconnect', () => process.kill(process.pid, 'SIGTERM'));
  // The program sees the command line it would have had if run directly.
  const program = resolve(mode);
  process.argv.splice(1, 2, program);
  import(pathToFileURL(program).href).catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
} else {
  console.error('usage: node tether.js <program.js> [args…] | --exec <command> [args…]');
  process.exit(2);
}
