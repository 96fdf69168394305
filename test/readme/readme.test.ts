// The README is what a newcomer follows line by line, so its examples are run here as written, on
// the stack `npm start` gives, and their answers held to what the README shows. Only the values
// that belong to one machine are swapped: the stack's address, the local receiver's port, the ops
// ports and the state directory (`var/`), each for this run's own.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { CallbackUrlGuard } from '@media/callback-guard';
import { loadConfig } from '@media/common';
import { verify } from '@media/webhooks';
import { examples, fencedBlocks, isRepeatable, sections, type Example } from './support/examples';
import { finished, type Finished } from '../support/process';
import { NpmStartStack } from './support/npm-start';
import { Bindings, matchOutput } from './support/outputs';

const ROOT = resolve(__dirname, '../..');
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
/** The sections whose every example is run. */
const COVERED = ['Quick start', 'API walk-through', 'Callbacks (webhooks)', 'Callbacks API', 'Admin CLI'];
/** What the README's examples assume: `npm start` with no settings. */
const DEFAULTS = { base: 'http://localhost:8080', receiverPort: 9443, opsPort: 9464 };
/** How long a repeatable command (a GET) may take to show what the README shows. */
const SETTLE_MS = 30_000;

function bash(script: string, cwd: string, env: NodeJS.ProcessEnv): Promise<Finished> {
  return finished(spawn('bash', ['-e', '-o', 'pipefail', '-c', script], { cwd, env, timeout: 60_000 }));
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

describe('README', () => {
  const blocks = sections(README, COVERED).flatMap((s) => fencedBlocks(s.text, s.firstLine));
  const all = examples(blocks);

  it('has every section whose examples are run, each with examples', () => {
    const found = sections(README, COVERED);
    expect(found.map((s) => s.title)).toEqual(COVERED);
    for (const s of found) expect([s.title, examples(fencedBlocks(s.text)).some((e) => e.marker.kind === 'run')]).toEqual([s.title, true]);
    expect(all.filter((e) => e.marker.kind === 'run').length).toBeGreaterThan(30);
  });

  it('says why each example that is not run is not run', () => {
    for (const e of all) if (e.marker.kind === 'skip') expect([e.command.line, e.marker.reason]).toEqual([e.command.line, expect.stringMatching(/\w{3}/)]);
  });

  it('cites no file outside the repository and no absolute path', () => {
    const links = [...README.matchAll(/\]\(([^)#]+)(?:#[^)]*)?\)/g)].map((m) => m[1]).filter((target) => !/^https?:/.test(target));
    for (const target of links) expect([target, readFileSync(join(ROOT, target)).length > 0]).toEqual([target, true]);
    expect(README).not.toMatch(/(^|[\s(`'"])\/(work|home|Users|root)\//m);
    expect(README).not.toMatch(/\.\.\/shared\b/);
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
        .split(`localhost:${DEFAULTS.receiverPort}`)
        .join(`localhost:${stack.receiverPort}`)
        .replace(/127\.0\.0\.1:(946[4-6])\b/g, (_, port: string) => `127.0.0.1:${stack.opsPort + Number(port) - DEFAULTS.opsPort}`)
        .replace(/(?<![\w./-])(?:\.\/)?var\//g, `${stack.stateDir}/`);

    it('runs every example as written and prints what the README shows; the first callback arrives signed', async () => {
      const bindings = new Bindings();
      // The commands run in a scratch directory (they download files); npm scripts run in the repository.
      const env = { ...stack.env, README_REPO_ROOT: ROOT };
      const prelude = 'npm() { (cd "$README_REPO_ROOT" && command npm "$@"); }\n';
      let preamble = '';
      const where = (e: Example) => `README.md line ${e.command.line} (${e.command.heading})`;

      for (const example of all) {
        if (example.marker.kind === 'skip') continue;
        if (example.marker.kind === 'stack') {
          const problems = example.expected ? matchOutput(localise(example.expected.body), stack.launcherLines, bindings) : [];
          if (problems.length > 0) throw new Error(`${where(example)}: npm start printed\n${stack.launcherLines}\n${problems.join('\n')}`);
          continue;
        }
        const command = bindings.apply(localise(example.command.body));
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
              `${where(example)}:\n$ ${command}\n--- printed:\n${ran.stdout}\n--- stderr:\n${ran.stderr}\n--- differences:\n${problems.join('\n')}`,
            );
          }
          await new Promise((r) => setTimeout(r, 250));
        }
        // The block that defines BASE and API_KEY holds for every later command, as in a reader's shell.
        if (/^BASE=/m.test(example.command.body)) preamble = `${command}\n`;
      }
      expect(preamble).toMatch(/^BASE=/m);

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
    }, 150_000);
  });

  it('relies on settings that only npm start gives: production refuses the local callback URL', async () => {
    const production = loadConfig({});
    expect([production.callbackAllowHttp, production.callbackAllowedCidrs, production.callbackCaFile]).toEqual([false, [], undefined]);
    const guard = new CallbackUrlGuard({ allowHttp: production.callbackAllowHttp, allowedCidrs: production.callbackAllowedCidrs });
    await expect(guard.check(`https://localhost:${DEFAULTS.receiverPort}/webhooks`)).rejects.toThrow('loopback name');
    await expect(guard.check(`https://127.0.0.1:${DEFAULTS.receiverPort}/webhooks`)).rejects.toThrow('non-public address');
  });
});
