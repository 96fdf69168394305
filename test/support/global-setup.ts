import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';

/**
 * Integration tests start the built services, so make sure the build is current (incremental): the
 * packages, then the dashboard's browser app that the gateway serves (a no-op when nothing changed).
 */
export default function globalSetup(): void {
  const root = resolve(__dirname, '../..');
  execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-b'], { cwd: root, stdio: 'inherit' });
  execFileSync(process.execPath, [resolve(root, 'libs/dashboard/web/build-if-stale.mjs')], { cwd: root, stdio: 'inherit' });
}
