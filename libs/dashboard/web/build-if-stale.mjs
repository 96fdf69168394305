#!/usr/bin/env node
/**
 * Builds the dashboard's browser app (libs/dashboard/dist/web) when any of its sources, or the
 * contract it imports, is newer than the last build; otherwise does nothing, in a few milliseconds.
 * Called by scripts/setup.sh (before npm start / test / admin) and the Jest global setup.
 * `--force` builds regardless. Needs `tsc -b` to have run first (the contract's imports are typed
 * from the libraries' declaration files).
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const web = dirname(fileURLToPath(import.meta.url));
const pkg = dirname(web);
const output = join(pkg, 'dist', 'web', 'index.html');

function newest(path) {
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  let max = st.mtimeMs;
  for (const entry of readdirSync(path)) {
    if (entry === 'node_modules') continue;
    max = Math.max(max, newest(join(path, entry)));
  }
  return max;
}

function mtime(path) {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return -1;
  }
}

const inputs = [web, join(pkg, 'src', 'contract.ts'), join(pkg, 'package.json')];
const built = mtime(output);
if (!process.argv.includes('--force') && built >= Math.max(...inputs.map(newest))) process.exit(0);

const require = createRequire(join(pkg, 'package.json'));
const run = (script, args) => execFileSync(process.execPath, [script, ...args], { cwd: pkg, stdio: ['ignore', 2, 2] });
process.stderr.write('dashboard web app: building (libs/dashboard/dist/web)\n');
run(require.resolve('typescript/bin/tsc'), ['-p', join(web, 'tsconfig.json')]);
run(join(dirname(require.resolve('vite/package.json')), 'bin', 'vite.js'), ['build', '--config', join(web, 'vite.config.mts')]);
