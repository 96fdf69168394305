import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/**
 * Integration tests start the built services, so make sure the build is current (incremental): the
 * packages, then the dashboard's browser app that the gateway serves (a no-op when nothing changed).
 */
export default function globalSetup(): void {
  // Node's on-disk cache of compiled modules, for the Jest workers (which start after this and
  // inherit it) and the services a TestStack starts; a process spawned with an environment built
  // from scratch goes without it. A service spends most of its start loading about a thousand
  // modules, and the suite starts some two hundred.
  process.env.NODE_COMPILE_CACHE ??= join(tmpdir(), 'media-callbacks-node-compile-cache');
  const root = resolve(__dirname, '../..');
  execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-b'], { cwd: root, stdio: 'inherit' });
  execFileSync(process.execPath, [resolve(root, 'libs/dashboard/web/build-if-stale.mjs')], { cwd: root, stdio: 'inherit' });
}
