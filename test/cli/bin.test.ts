import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import { eventually } from '../../tools/cli/src/test-support/eventually';
import { apiError, FakeGateway } from '../../tools/cli/src/test-support/fake-gateway';
import { LocalHandler } from '../../tools/cli/src/test-support/local-handler';
import { finished } from '../support/process';

// The installed command as a developer runs it: the committed bin shim over the built dist/ (the
// global set-up runs tsc -b), its exit statuses, and its signals.

const BIN = join(__dirname, '../../tools/cli/bin/media-callbacks.js');

/** An environment without the developer's own settings (a proxy, a key) leaking in. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, ...extra };
}

function run(args: string[], env: NodeJS.ProcessEnv = cleanEnv()): ChildProcessWithoutNullStreams {
  return spawn(process.execPath, [BIN, ...args], { env, stdio: 'pipe' });
}

describe('help and usage', () => {
  it.each([[['--help']], [['help']], [['-h']]])('%j prints the overview and exits 0', async (args) => {
    const { code, stdout, stderr } = await finished(run(args));
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(stdout).toMatch(/^Usage: media-callbacks <command> \[options\]\n/);
    expect(stdout).toContain('listen');
  });

  it.each([[['listen', '--help']], [['help', 'listen']]])('%j prints listen help and exits 0', async (args) => {
    const { code, stdout, stderr } = await finished(run(args));
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(stdout).toMatch(/^Usage: media-callbacks listen --forward-to URL/);
    expect(stdout).toContain('MEDIA_API_KEY');
  });

  it.each([
    [['frob'], 'unknown command "frob"'],
    [['listen', '--frob'], 'unknown option --frob'],
    [['listen'], '--forward-to is required'],
  ])('%j is an error with the usage on stderr, exit 2', async (args, message) => {
    const { code, stdout, stderr } = await finished(run(args, cleanEnv({ MEDIA_API_KEY: 'sk_test' })));
    expect({ code, stdout }).toEqual({ code: 2, stdout: '' });
    expect(stderr.startsWith(`media-callbacks: ${message}`)).toBe(true);
    expect(stderr).toMatch(/\n\nUsage: media-callbacks /);
  });
});

describe('listen', () => {
  let gateway: FakeGateway;
  let handler: LocalHandler;

  beforeEach(async () => {
    gateway = await FakeGateway.start();
    handler = await LocalHandler.start();
  });

  afterEach(async () => {
    await gateway.stop();
    await handler.stop();
  });

  function listen(extraArgs: string[] = []): { child: ChildProcessWithoutNullStreams; stdout: () => string; done: ReturnType<typeof finished> } {
    const child = run(
      ['listen', '--forward-to', handler.url().href, '--print-secret', ...extraArgs],
      cleanEnv({ MEDIA_API_KEY: 'sk_secret_key', MEDIA_BASE_URL: gateway.url }),
    );
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    return { child, stdout: () => stdout, done: finished(child) };
  }

  it.each(['SIGINT', 'SIGTERM'] as const)('forwards, then on %s closes the connection cleanly and exits 0', async (signal) => {
    const { child, stdout, done } = listen(['--events', 'video.failed']);
    const connection = await gateway.connection(0);
    await eventually(() => expect(stdout()).toContain('Ready.'));
    connection.deliver({ id: 'dlv_bin', webhook_id: 'msg_bin', event_type: 'video.failed' });
    expect(await connection.result('dlv_bin')).toMatchObject({ status: 200 });
    await eventually(() => expect(stdout()).toMatch(/ {2}video\.failed {2}msg_bin {2}200 {2}\d+ ms\n/));

    child.kill(signal);
    const { code, stdout: out, stderr } = await done;
    expect(code).toBe(0);
    expect(await connection.waitClosed()).toEqual({ code: 1000, reason: 'listener stopped' });
    expect(out.split('\n')[1]).toBe('whsec_dGVzdHNlY3JldA==');
    expect(out + stderr).not.toContain('sk_secret_key');
  });

  it('exits 1 when the gateway refuses the key', async () => {
    gateway.refusals.push({ status: 401, body: apiError('Invalid API key provided.', 'authentication_error', 'invalid_api_key') });
    const { code, stderr } = await listen().done;
    expect(code).toBe(1);
    expect(stderr).toContain('Invalid API key provided.');
    expect(gateway.upgrades).toHaveLength(1);
  });
});
