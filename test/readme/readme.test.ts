// The README and the docs are what a newcomer follows line by line, so their examples are run here as
// written, in reading order, on the stack `npm start` gives, and their answers held to what the page
// shows. Only the values
// that belong to one machine are swapped: the stack's address, the local receiver's port, the ops
// ports and the state directory (`var/`), each for this run's own.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { CallbackUrlGuard } from '@media/callback-guard';
import { loadConfig } from '@media/common';
import { verify } from '@media/callback-signing';
import { examples, fencedBlocks, isRepeatable, sections, type Example } from './support/examples';
import { finished, type Finished } from '../support/process';
import { NpmStartStack } from './support/npm-start';
import { Bindings, matchOutput } from './support/outputs';

const ROOT = resolve(__dirname, '../..');
/**
 * The pages whose examples are run, in the order a reader follows them (later examples use ids that
 * earlier ones printed), and the `##` sections of each whose every example runs (`all`: every one).
 */
const PAGES: { file: string; sections: string[] | 'all' }[] = [
  { file: 'README.md', sections: ['Quick start', 'A first signed callback'] },
  { file: 'docs/api.md', sections: 'all' },
  { file: 'docs/callbacks.md', sections: 'all' },
  { file: 'docs/operations.md', sections: ['Admin CLI'] },
];
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
/** What the README's examples assume: `npm start` with no settings. */
const DEFAULTS = { base: 'http://localhost:8080', receiverPort: 9443, opsPort: 9464 };
/** A block that only sets shell variables (`NAME=…` on each line). */
const ASSIGNMENTS = /^[A-Z][A-Z0-9_]*=.*(?:\n[A-Z][A-Z0-9_]*=.*)*$/;
/** How long a repeatable command (a GET) may take to show what the README shows. */
const SETTLE_MS = 30_000;

/**
 * Runs one example. Nothing is read from stdin, which is /dev/null: a bash whose stdin is a socket
 * (what Node's pipes are) and that is no shell's child takes itself for one run by sshd and reads
 * ~/.bashrc first, which on a machine with pyenv or nvm set up there costs most of a second per command.
 */
function bash(script: string, cwd: string, env: NodeJS.ProcessEnv): Promise<Finished> {
  return finished(spawn('bash', ['-e', '-o', 'pipefail', '-c', script], { cwd, env, timeout: 60_000, stdio: ['ignore', 'pipe', 'pipe'] }));
}

/** The deliveries the local receiver kept, read over HTTPS with the CA `npm start` made. */
function receiverDeliveries(stack: NpmStartStack): Promise<{ data: any[] }> {
  const ca = readFileSync(join(stack.stateDir, 'local-receiver', 'ca.pem'));
  return new Promise((done, fail) => {
    const req = request({ host: '127.0.0.1', servername: 'localhost', port: stack.receiverPort, path: '/webhooks', ca }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => done(JSON.parse(body)));
    });
    req.once('error', fail);
    req.end();
  });
}

/** The `##` titles of a page, outside fenced blocks. */
function titles(text: string): string[] {
  let fence = false;
  return text.split('\n').flatMap((line) => {
    if (line.startsWith('```')) fence = !fence;
    const title = !fence && /^## (.+)$/.exec(line)?.[1];
    return title ? [title.trim()] : [];
  });
}

const pages = PAGES.map((page) => {
  const text = readFileSync(join(ROOT, page.file), 'utf8');
  const wanted = page.sections === 'all' ? titles(text) : page.sections;
  const found = sections(text, wanted);
  return { ...page, wanted, found, examples: examples(found.flatMap((s) => fencedBlocks(s.text, s.firstLine))) };
});
const all = pages.flatMap((page) => page.examples.map((example) => ({ file: page.file, example })));

describe('README and docs examples', () => {
  it('has every section whose examples are run, each page with examples', () => {
    for (const page of pages) {
      expect([page.file, page.found.map((s) => s.title)]).toEqual([page.file, page.wanted]);
      expect([page.file, page.examples.some((e) => e.marker.kind === 'run')]).toEqual([page.file, true]);
    }
    expect(all.filter(({ example }) => example.marker.kind === 'run').length).toBeGreaterThan(30);
  });

  it('says why each example that is not run is not run', () => {
    for (const { file, example: e } of all) {
      if (e.marker.kind === 'skip') expect([file, e.command.line, e.marker.reason]).toEqual([file, e.command.line, expect.stringMatching(/\w{3}/)]);
    }
  });

  it('writes what the examples download or save under var/, which git ignores', () => {
    // A reader runs them at the repository's root: anything else would be left in the tree (and a
    // saved workspace holds live credentials).
    const outputs = all.flatMap(({ file, example }) =>
      example.marker.kind === 'skip'
        ? []
        : [...example.command.body.matchAll(/(?:\s-o|(?<![0-9&=-])>)\s*([^\s|;&)]+)/g)].map((m) => ({ at: `${file}:${example.command.line}`, path: m[1] })),
    );
    expect(outputs.length).toBeGreaterThan(3);
    expect(outputs.filter(({ path }) => !/^(\.\/)?var\//.test(path) && path !== '/dev/null')).toEqual([]);
    expect(readFileSync(join(ROOT, '.gitignore'), 'utf8')).toMatch(/^var\/$/m);
  });

  it('keeps the README a front door: at most 300 lines, with a map of every page in docs/', () => {
    expect(README.split('\n').length).toBeLessThanOrEqual(300);
    for (const page of readdirSync(join(ROOT, 'docs')).filter((name) => name.endsWith('.md'))) expect(README).toContain(`](docs/${page})`);
  });

  describe('on the stack npm start gives', () => {
    const stack = new NpmStartStack();
    let workDir = '';

    beforeAll(async () => {
      workDir = await mkdtemp(join(tmpdir(), 'readme-work-'));
      await stack.start();
    }, 60_000);

    afterAll(async () => {
      await stack.stop();
      await rm(workDir, { recursive: true, force: true });
    }, 30_000);

    /** The README's values for one machine, replaced by this run's. */
    const localise = (text: string): string =>
      text
        .split(DEFAULTS.base)
        .join(stack.baseUrl)
        .replace(new RegExp(`\\b(localhost|127\\.0\\.0\\.1):${DEFAULTS.receiverPort}\\b`, 'g'), (_, host: string) => `${host}:${stack.receiverPort}`)
        .replace(/127\.0\.0\.1:(946[4-6])\b/g, (_, port: string) => `127.0.0.1:${stack.opsPort + Number(port) - DEFAULTS.opsPort}`)
        .replace(/(?<![\w./-])(?:\.\/)?var\//g, `${stack.stateDir}/`);

    it('runs every example as written and prints what the README shows; the first callback arrives signed', async () => {
      const bindings = new Bindings();
      // The commands run in a scratch directory (they download files); npm scripts run in the repository.
      const env = { ...stack.env, README_REPO_ROOT: ROOT };
      const prelude = 'npm() { (cd "$README_REPO_ROOT" && command npm "$@"); }\n';
      let preamble = '';
      const where = (file: string, e: Example) => `${file} line ${e.command.line} (${e.command.heading})`;

      for (const { file, example } of all) {
        if (example.marker.kind === 'skip') continue;
        if (example.marker.kind === 'stack') {
          const problems = example.expected ? matchOutput(localise(example.expected.body), stack.launcherLines, bindings) : [];
          if (problems.length > 0) throw new Error(`${where(file, example)}: npm start printed\n${stack.launcherLines}\n${problems.join('\n')}`);
          continue;
        }
        const command = bindings.apply(localise(example.command.body));
        if (ASSIGNMENTS.test(example.command.body.trim())) {
          // A block of variables (BASE and API_KEY, an id read from an answer) is evaluated once, where
          // the reader meets it, and its values hold for every later command, as in a reader's shell.
          const names = [...example.command.body.matchAll(/^([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1]);
          const ran = await bash(`${prelude}${preamble}${command}\ndeclare -p ${names.join(' ')}`, workDir, env);
          if (ran.code !== 0) throw new Error(`${where(file, example)}:\n$ ${command}\n--- exit code ${ran.code}\n--- stderr:\n${ran.stderr}`);
          preamble += ran.stdout;
          continue;
        }
        const repeatable = example.expected !== undefined && isRepeatable(command);
        const deadline = Date.now() + SETTLE_MS;
        for (;;) {
          const ran = await bash(prelude + preamble + command, workDir, env);
          const attempt = bindings.clone();
          const problems =
            ran.code !== 0 ? [`exit code ${ran.code}`] : example.expected ? matchOutput(localise(example.expected.body), ran.stdout, attempt) : [];
          if (problems.length === 0) {
            bindings.adopt(attempt);
            break;
          }
          if (!repeatable || Date.now() > deadline) {
            throw new Error(
              `${where(file, example)}:\n$ ${command}\n--- printed:\n${ran.stdout}\n--- stderr:\n${ran.stderr}\n--- differences:\n${problems.join('\n')}`,
            );
          }
          await new Promise((r) => setTimeout(r, 250));
        }
      }
      expect(preamble).toMatch(/^declare -- BASE=/m);

      // Beyond the README's word for it: every delivery the receiver accepted verifies here too,
      // with the demo workspace's secret, over the bytes the dispatcher signed.
      const secret = (JSON.parse(readFileSync(join(stack.stateDir, 'demo-workspace.json'), 'utf8')) as { signing_secret: string }).signing_secret;
      const { data } = await receiverDeliveries(stack);
      const verified = data.filter((d) => d.verified);
      expect(verified.length).toBeGreaterThanOrEqual(3);
      for (const delivery of verified) {
        expect(verify(Buffer.from(JSON.stringify(delivery.event)), delivery.headers, secret)).toEqual(delivery.event);
      }
      expect(new Set(verified.map((d) => d.event.type))).toEqual(new Set(['image.completed', 'video.completed']));
    }, 300_000);
  });

  it('relies on settings that only npm start gives: production refuses the local callback URL', async () => {
    const production = loadConfig({});
    expect([production.callbackAllowHttp, production.callbackAllowedCidrs, production.callbackAllowedEndpoints, production.callbackCaFile]).toEqual([
      false,
      [],
      [],
      undefined,
    ]);
    const guard = new CallbackUrlGuard({
      allowHttp: production.callbackAllowHttp,
      allowedCidrs: production.callbackAllowedCidrs,
      allowedEndpoints: production.callbackAllowedEndpoints,
    });
    await expect(guard.check(`https://localhost:${DEFAULTS.receiverPort}/webhooks`)).rejects.toThrow('loopback name');
    await expect(guard.check(`https://127.0.0.1:${DEFAULTS.receiverPort}/webhooks`)).rejects.toThrow('non-public address');
  });
});
