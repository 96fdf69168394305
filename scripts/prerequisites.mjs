// What `npm test` needs from the machine beyond its npm packages, found or installed before anything
// slow runs: Redis's server and client (the cluster and crash tests start servers of their own),
// openssl (the callback tests' throwaway CA), curl (the docs' examples are curl commands), Debian's
// Prometheus (promtool checks and unit-tests the alert rules; a real server evaluates the alerts and
// the autoscalers' queries against the services) and Debian's Chromium (the dashboard's browser
// tests; playwright-core downloads no browser).
// `node scripts/prerequisites.mjs test:image`: what `npm run test:image` needs instead: buildah
// (builds the Dockerfile, --isolation chroot, no daemon), podman (imports the stand-in base image,
// mounts the built one), debootstrap (the stand-in's Debian), Redis (the services' store, on
// loopback), openssl, and util-linux's unshare (a mount namespace per service: read-only root,
// writable /tmp and /data/media). That test mounts file systems, so it runs as root.
// As root with apt-get, what is missing is installed; otherwise one line says what to install.
// No dependencies: this runs before `npm ci` has had a chance to.
import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';

const chromium = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

/**
 * Each program the tests run, and the Debian package that has it. `recommends: false` where the
 * package's recommendations are services the tests never run (Prometheus recommends node-exporter
 * and its collectors, with disk and IPMI tools and timers of their own).
 */
const SUITES = {
  test: [
    { program: 'redis-server', pkg: 'redis-server' },
    { program: 'redis-cli', pkg: 'redis-tools' },
    { program: 'openssl', pkg: 'openssl' },
    { program: 'curl', pkg: 'curl' },
    { program: 'prometheus', pkg: 'prometheus', recommends: false },
    { program: 'promtool', pkg: 'prometheus', recommends: false },
    { program: chromium, pkg: 'chromium' },
  ],
  'test:image': [
    { program: 'buildah', pkg: 'buildah' },
    { program: 'podman', pkg: 'podman' },
    { program: 'debootstrap', pkg: 'debootstrap' },
    { program: 'redis-server', pkg: 'redis-server' },
    { program: 'unshare', pkg: 'util-linux' },
    { program: 'openssl', pkg: 'openssl' },
  ],
};
const suite = process.argv[2] ?? 'test';
const NEEDED = SUITES[suite];
if (!NEEDED) {
  console.error(`usage: node scripts/prerequisites.mjs [${Object.keys(SUITES).join('|')}]`);
  process.exit(2);
}
const command = suite === 'test' ? 'npm test' : `npm run ${suite}`;
const isRoot = process.getuid?.() === 0;
if (suite === 'test:image' && !isRoot) {
  console.error(`${command} needs root (buildah --isolation chroot, podman image mount, mount namespaces): run it as root, e.g. "sudo ${command}"`);
  process.exit(1);
}

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

function aptInstall(needs) {
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const apt = (args) => spawnSync('apt-get', args, { stdio: ['ignore', 'ignore', 'inherit'], env }).status === 0;
  const pkgs = (list) => [...new Set(list.map((n) => n.pkg))];
  const plain = pkgs(needs.filter((n) => n.recommends !== false));
  const bare = pkgs(needs.filter((n) => n.recommends === false));
  console.error(`installing ${[...plain, ...bare].join(' ')} from Debian's packages…`);
  if (!apt(['update', '-qq'])) return false;
  return (
    (plain.length === 0 || apt(['install', '-y', '-qq', ...plain])) && (bare.length === 0 || apt(['install', '-y', '-qq', '--no-install-recommends', ...bare]))
  );
}

let lacking = missing();
if (lacking.length > 0 && isRoot && found('apt-get')) {
  aptInstall(lacking);
  lacking = missing();
}
if (lacking.length > 0) {
  const pkgs = [...new Set(lacking.map((n) => n.pkg))];
  const browser = lacking.some((n) => n.pkg === 'chromium') ? ` (or set CHROMIUM_PATH to a Chromium binary; looked for ${chromium})` : '';
  console.error(
    `${command} needs ${lacking.map((n) => (isAbsolute(n.program) ? 'chromium' : n.program)).join(', ')}: install with "sudo apt-get install -y ${pkgs.join(' ')}"${browser}`,
  );
  process.exit(1);
}
