// `npm start` and `npm run admin` on a machine whose node is older than .nvmrc's: npm runs the set-up
// step (`prestart`, `preadmin`) on that old node, and the set-up step's first act is to put the Node
// of .nvmrc on PATH, so that `npm ci` runs on it (an `npm ci` on an older Node prints an EBADENGINE
// warning for every package whose `engines` asks for a newer one), and so do the build and the command.
//
// Run in a copy of the repository's package files (the lock file and every workspace's package.json),
// with .cache/ shared, so the Node fetched once is reused. The install is npm's own dry run
// (`npm_config_dry_run`: the lock file is read and checked against `engines` as by a real `npm ci`,
// and nothing is written), and the build steps and the launcher are stand-ins that print which Node ran them.
import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { finished } from '../support/process';

const ROOT = resolve(__dirname, '../..');
const WANT = Number(readFileSync(join(ROOT, '.nvmrc'), 'utf8').trim());

/** The first `node` on PATH older than .nvmrc's line (the machine's own, behind the fetched one), if any. */
function olderNode(): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const node = join(dir, 'node');
    if (!dir || !existsSync(node)) continue;
    try {
      const major = Number(execFileSync(node, ['-p', 'process.versions.node.split(".")[0]'], { encoding: 'utf8' }).trim());
      if (major < WANT) return node;
    } catch {
      // Not a runnable node.
    }
  }
  return undefined;
}

const OLD_NODE = olderNode();

/** Prints what ran and on which Node: the stand-in for a build step or a command. */
const standIn = (name: string) => `#!/usr/bin/env node\nconsole.log(${JSON.stringify(name)} + ' on ' + process.version);\n`;

function write(path: string, text: string, mode = 0o644): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text, { mode });
}

/** A copy of what npm and the set-up step read, with stand-ins for what they run. */
function repositoryCopy(): string {
  const dir = mkdtempSync(join(tmpdir(), 'npm-start-old-node-'));
  for (const file of ['package.json', 'package-lock.json', '.nvmrc', 'scripts/setup.sh', 'scripts/use-node.sh', 'scripts/node.sh']) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    copyFileSync(join(ROOT, file), join(dir, file));
  }
  for (const group of ['libs', 'services', 'tools']) {
    for (const name of readdirSync(join(ROOT, group))) {
      const manifest = join(group, name, 'package.json');
      if (existsSync(join(ROOT, manifest))) write(join(dir, manifest), readFileSync(join(ROOT, manifest), 'utf8'));
    }
  }
  mkdirSync(join(ROOT, '.cache'), { recursive: true });
  symlinkSync(join(ROOT, '.cache'), join(dir, '.cache'));
  // Installed once, long ago: older than the lock file, so the set-up step runs `npm ci`.
  write(join(dir, 'node_modules/.package-lock.json'), '{}\n');
  utimesSync(join(dir, 'node_modules/.package-lock.json'), new Date('2000-01-01'), new Date('2000-01-01'));
  write(join(dir, 'node_modules/.bin/tsc'), standIn('tsc'), 0o755);
  write(join(dir, 'libs/dashboard/web/build-if-stale.mjs'), standIn('dashboard build'));
  write(join(dir, 'tools/admin/dist/local-stack.js'), standIn('launcher'));
  write(join(dir, 'tools/admin/dist/main.js'), standIn('admin CLI'));
  return dir;
}

describe(`npm's entry points on a Node older than ${WANT}`, () => {
  let copy = '';

  // The copies share the repository's .cache: the Node of .nvmrc is fetched into it here, once, as
  // any entry point on an older Node would (the runs below make npm's installs dry runs, which fetch
  // nothing). A suite started on a newer Node may not have fetched it yet.
  beforeAll(() => {
    if (!OLD_NODE) return;
    execFileSync('bash', ['-c', 'source scripts/use-node.sh && node -v'], {
      cwd: ROOT,
      env: { ...process.env, PATH: `${dirname(OLD_NODE)}${delimiter}${process.env.PATH ?? ''}` },
      stdio: 'ignore',
      timeout: 120_000,
    });
  }, 150_000);

  beforeEach(() => {
    copy = repositoryCopy();
  });

  afterEach(() => rmSync(copy, { recursive: true, force: true }));

  // Only a machine with an older node on PATH can show this; the suite's own node is the fetched one.
  (OLD_NODE ? it.each : it.skip.each)([
    ['npm start', ['start'], 'launcher'],
    ['npm run admin', ['run', 'admin'], 'admin CLI'],
  ])(
    '%s installs and runs everything on the Node of .nvmrc, without an EBADENGINE warning',
    async (_name, args, command) => {
      const ran = await finished(
        // One stream, stderr into stdout, so that the order of what was printed is kept.
        spawn('bash', ['-c', 'exec npm "$@" 2>&1', 'npm', ...args], {
          cwd: copy,
          // From scratch: the old node first on PATH, as on the newcomer's machine, and no npm settings from the run around this one.
          env: {
            HOME: process.env.HOME,
            PATH: [dirname(OLD_NODE!), process.env.PATH].join(delimiter),
            npm_config_dry_run: 'true',
            npm_config_update_notifier: 'false',
          },
          // stdin /dev/null: a bash with a socket for stdin and no shell above it reads ~/.bashrc (test/readme/readme.test.ts).
          stdio: ['ignore', 'pipe', 'pipe'],
        }),
      );
      const lines = ran.stdout.split('\n');
      // The dry run lists every package it would add: the rest is what a failure needs to show.
      if (ran.code !== 0) throw new Error(`npm ${args.join(' ')} exited with ${ran.code}:\n${lines.filter((l) => !l.startsWith('add ')).join('\n')}`);
      expect(lines.filter((line) => line.includes('EBADENGINE'))).toEqual([]);
      // The install ran, on the Node of .nvmrc; then the build steps and the command did too.
      const ranOn = lines.flatMap((line) => {
        const match = /^(installing dependencies \(npm ci\)|tsc|dashboard build|launcher|admin CLI) on (?:Node )?v(\d+)\./.exec(line);
        return match ? [[match[1], Number(match[2]) >= WANT]] : [];
      });
      expect(ranOn).toEqual([
        ['installing dependencies (npm ci)', true],
        ['tsc', true],
        ['dashboard build', true],
        [command, true],
      ]);
      expect(ran.stdout).toMatch(/^added \d+ packages/m);
    },
    120_000,
  );
});
