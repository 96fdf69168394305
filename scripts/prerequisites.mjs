// What `npm test` needs from the machine beyond its npm packages, found or installed before anything
// slow runs: Redis's server and client (the cluster and crash tests start servers of their own),
// openssl (the callback tests' throwaway CA), curl (the docs' examples are curl commands) and
// Debian's Chromium (the dashboard's browser tests; playwright-core downloads no browser).
// As root with apt-get, what is missing is installed; otherwise one line says what to install.
// No dependencies: this runs before `npm ci` has had a chance to.
import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';

const chromium = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

/** Each program the tests run, and the Debian package that has it. */
const NEEDED = [
  { program: 'redis-server', pkg: 'redis-server' },
  { program: 'redis-cli', pkg: 'redis-tools' },
  { program: 'openssl', pkg: 'openssl' },
  { program: 'curl', pkg: 'curl' },
  { program: chromium, pkg: 'chromium' },
];

function executable(path) {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function found(program) {
  if (isAbsolute(program)) return executable(program);
  return (process.env.PATH ?? '').split(delimiter).some((dir) => dir !== '' && executable(join(dir, program)));
}

const missing = () => NEEDED.filter((n) => !found(n.program));

function aptInstall(pkgs) {
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  console.error(`installing ${pkgs.join(' ')} from Debian's packages…`);
  const update = spawnSync('apt-get', ['update', '-qq'], { stdio: ['ignore', 'ignore', 'inherit'], env });
  const install = update.status === 0 && spawnSync('apt-get', ['install', '-y', '-qq', ...pkgs], { stdio: ['ignore', 'ignore', 'inherit'], env });
  return install && install.status === 0;
}

let lacking = missing();
if (lacking.length > 0 && process.getuid?.() === 0 && found('apt-get')) {
  aptInstall([...new Set(lacking.map((n) => n.pkg))]);
  lacking = missing();
}
if (lacking.length > 0) {
  const pkgs = [...new Set(lacking.map((n) => n.pkg))];
  const browser = lacking.some((n) => n.pkg === 'chromium') ? ` (or set CHROMIUM_PATH to a Chromium binary; looked for ${chromium})` : '';
  console.error(
    `npm test needs ${lacking.map((n) => (isAbsolute(n.program) ? 'chromium' : n.program)).join(', ')}: install with "sudo apt-get install -y ${pkgs.join(' ')}"${browser}`,
  );
  process.exit(1);
}
