import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';

/** Integration tests start the built services, so make sure the build is current (incremental). */
export default function globalSetup(): void {
  execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-b'], { cwd: resolve(__dirname, '../..'), stdio: 'inherit' });
}
