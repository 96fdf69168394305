// `npm start` in a terminal (a pseudo-terminal here): the services write one short human line per
// event, the level coloured, so that the README walk-through's lines (the request, the job, the
// callback attempt and the local receiver's "signature verified") read at a glance, with no JSON
// line among them. Piped, as in every other test of the stack, the services' lines stay JSON.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { eventually } from '../support/stack';
import { NpmStartStack } from '../readme/support/npm-start';

const SERVICE_LINE = /^\d\d:\d\d:\d\d (info |warn |error|debug) (api-gateway|generator|webhook-dispatcher) \S/;
const ESC = '\u001b';
const ANSI = new RegExp(`${ESC}\\[\\d+m`, 'g');
/** A pretty line's time, `HH:MM:SS `, as a pattern. */
const TIME = '\\d\\d:\\d\\d:\\d\\d ';
/** A pretty line's start, its level's colours taken off: the time, and the level padded to five. */
const at = (level: string) => `${TIME}${level.padEnd(5)} `;

/** A line that is a JSON object on its own, as a service's log line in the JSON format is. */
function isJsonObject(line: string): boolean {
  try {
    const value: unknown = JSON.parse(line);
    return typeof value === 'object' && value !== null;
  } catch {
    return false;
  }
}

describe('npm start in a terminal', () => {
  const stack = new NpmStartStack({ terminal: true });

  beforeAll(async () => {
    await stack.start();
  }, 90_000);

  afterAll(async () => {
    await stack.stop();
  }, 30_000);

  it('prints the walk-through as one short line per event, coloured by level, and not one JSON line', async () => {
    const demo = JSON.parse(readFileSync(join(stack.stateDir, 'demo-workspace.json'), 'utf8')) as { api_key: string; signing_secret: string };
    // The README's first signed callback.
    const res = await fetch(`${stack.baseUrl}/v1/images/generations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${demo.api_key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'pixel-1',
        prompt: 'a red fox in a snowy forest at night',
        callback_url: `https://localhost:${stack.receiverPort}/webhooks`,
      }),
    });
    expect(res.status).toBe(202);
    const job = (await res.json()) as { id: string };
    const plain = () => stack.stdout.replace(ANSI, '');
    // The receiver's line, then the dispatcher's record of the attempt (in whichever format it is written).
    const delivered = /^local receiver: webhook (msg_\w+): image\.completed \(signature verified\)$/m;
    const messageId = await eventually(() => (/callback attempt/.test(plain()) ? delivered.exec(plain())?.[1] : undefined), 30_000, 'the delivery').catch(
      (err) => {
        throw new Error(`${String(err)}\nthe terminal showed:\n${stack.stdout}`);
      },
    );

    const lines = plain().split('\n');
    const line = (pattern: string) => expect.stringMatching(new RegExp(`^${pattern}$`));
    expect(lines).toEqual(
      expect.arrayContaining([
        line(`${at('info')}api-gateway request method=POST path=/v1/images/generations status=202 duration=\\d+ms`),
        line(`${at('info')}generator job completed job_id=${job.id}`),
        `local receiver: webhook ${messageId}: image.completed (signature verified)`,
        line(`${at('info')}webhook-dispatcher callback attempt job_id=${job.id} message_id=${messageId} status=200 duration=\\d+ms`),
        line(`${at('warn')}webhook-dispatcher CALLBACK URL CHECKS RELAXED: for development and tests only`),
        'stack ready (Ctrl-C stops it)',
      ]),
    );
    expect(lines.filter(isJsonObject)).toEqual([]);
    const serviceLines = lines.filter((l) => SERVICE_LINE.test(l));
    expect(serviceLines.length).toBeGreaterThanOrEqual(6);
    // The demo workspace's secrets are printed once by the launcher, on purpose; never by a service.
    expect(serviceLines.filter((l) => l.includes(demo.api_key) || l.includes(demo.signing_secret))).toEqual([]);
    // Coloured: the level of each service line, and nothing else.
    expect(stack.stdout).toMatch(new RegExp(`^${TIME}${ESC}\\[32minfo ${ESC}\\[39m api-gateway `, 'm'));
    expect(stack.stdout).toMatch(new RegExp(`^${TIME}${ESC}\\[33mwarn ${ESC}\\[39m webhook-dispatcher `, 'm'));
    expect(stack.stdout.match(ANSI)!.length).toBe(2 * serviceLines.length);
  }, 60_000);
});
