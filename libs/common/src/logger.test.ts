import { createLogger } from './logger';

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

describe('log lines on stdout', () => {
  let writes: string[];
  let spy: jest.SpyInstance;

  beforeEach(async () => {
    // Past the gap since whatever wrote before this test.
    await sleep(30);
    writes = [];
    spy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      writes.push(String(chunk));
      return true;
    });
  });

  afterEach(() => spy.mockRestore());

  const messages = () =>
    writes
      .join('')
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as { message: string }).message);

  it('writes the info lines of one turn together at its end, in order', async () => {
    const logger = createLogger('test', 'info');
    logger.info('one');
    logger.info('two', { n: 2 });
    expect(writes).toEqual([]);
    await nextTurn();
    expect(writes).toHaveLength(1);
    expect(messages()).toEqual(['one', 'two']);
  });

  it('writes lines that follow a write closely together, in one go, in order', async () => {
    const logger = createLogger('test', 'info');
    logger.info('first');
    await nextTurn();
    logger.info('second');
    logger.info('third');
    // However slow the machine, the two lines logged in one turn share the write that follows.
    const deadline = Date.now() + 5_000;
    while (writes.length < 2 && Date.now() < deadline) await sleep(5);
    expect(writes).toHaveLength(2);
    expect(writes[1]).toContain('"second"');
    expect(writes[1]).toContain('"third"');
    expect(messages()).toEqual(['first', 'second', 'third']);
  });

  it('writes a warning at once, after the lines before it', () => {
    const logger = createLogger('test', 'info');
    logger.info('before');
    logger.warn('crash point reached');
    expect(writes).toHaveLength(1);
    expect(messages()).toEqual(['before', 'crash point reached']);
  });

  it('still redacts secret fields', async () => {
    const logger = createLogger('test', 'info');
    logger.info('rotated', { signing_secret: 'whsec_abc', api_key: 'k' });
    await nextTurn();
    expect(writes.join('')).not.toMatch(/whsec_abc|"k"/);
  });
});

describe('LOG_FORMAT=pretty', () => {
  let writes: string[];
  let spy: jest.SpyInstance;
  const isTTY = Object.getOwnPropertyDescriptor(process.stdout, 'isTTY');
  const onTerminal = (yes: boolean) => Object.defineProperty(process.stdout, 'isTTY', { value: yes, configurable: true, writable: true });

  beforeEach(async () => {
    await sleep(30);
    writes = [];
    spy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      writes.push(String(chunk));
      return true;
    });
    onTerminal(false);
  });

  afterEach(() => {
    spy.mockRestore();
    if (isTTY) Object.defineProperty(process.stdout, 'isTTY', isTTY);
    else delete (process.stdout as { isTTY?: boolean }).isTTY;
  });

  const lines = () => writes.join('').split('\n').slice(0, -1);
  /** The lines written, each without its time, which is checked to be HH:MM:SS. */
  const withoutTime = () =>
    lines().map((line) => {
      expect(line.slice(0, 9)).toMatch(/^\d\d:\d\d:\d\d $/);
      return line.slice(9);
    });
  const ESC = '\u001b';

  it('writes one short line per event: time, level, service, message and the key fields, no JSON', async () => {
    const logger = createLogger('api-gateway', 'info', 'pretty');
    logger.info('request', {
      method: 'POST',
      path: '/v1/images/generations',
      route: '/v1/images/generations',
      status: 202,
      duration_ms: 12.4,
      workspace_id: 'ws_1',
    });
    logger.info('callback attempt', {
      message_id: 'msg_1',
      job_id: 'req_1',
      host: 'localhost:9443',
      attempt: 1,
      status: 200,
      error: null,
      duration_ms: 40,
      state: 'delivered',
    });
    logger.warn('generation error', { job_id: 'req_2', error: 'Error: the model server answered 500\n    at render (render.ts:1:1)' });
    logger.error('start-up failed\nsecond line of the message');
    await nextTurn();

    expect(withoutTime()).toEqual([
      'info  api-gateway request method=POST path=/v1/images/generations status=202 duration=12ms',
      'info  api-gateway callback attempt job_id=req_1 message_id=msg_1 status=200 duration=40ms',
      'warn  api-gateway generation error job_id=req_2 error="Error: the model server answered 500"',
      'error api-gateway start-up failed\\nsecond line of the message',
    ]);
    for (const line of lines()) expect(() => JSON.parse(line)).toThrow();
  });

  it('shows the local time of the event', async () => {
    const before = new Date();
    createLogger('generator', 'info', 'pretty').info('job completed', { job_id: 'req_1' });
    await nextTurn();
    const [hh, mm] = lines()[0]!.split(':').map(Number);
    // Within the minute the line was logged in (or the next one, right at its end).
    expect((hh! * 60 + mm! - (before.getHours() * 60 + before.getMinutes()) + 1440) % 1440).toBeLessThanOrEqual(1);
  });

  it('shows no secret field, top-level, nested or from a child logger', async () => {
    const logger = createLogger('webhook-dispatcher', 'debug', 'pretty');
    logger.info('rotated', { signing_secret: 'whsec_abc', api_key: 'sk_live_123', authorization: 'Bearer tok_1', password: 'hunter22' });
    logger.debug('request', { path: '/v1/models', status: 401, headers: { authorization: 'Bearer tok_2' } });
    logger.child({ job_id: 'req_1' }).info('attempt', { token: 'tok_3', status: 200 });
    await nextTurn();
    const text = writes.join('');
    expect(text).not.toMatch(/whsec_abc|sk_live_123|tok_1|tok_2|tok_3|hunter22/);
    expect(lines()).toEqual([
      expect.stringMatching(/ webhook-dispatcher rotated$/),
      expect.stringMatching(/ webhook-dispatcher request path=\/v1\/models status=401$/),
      expect.stringMatching(/ webhook-dispatcher attempt job_id=req_1 status=200$/),
    ]);
  });

  it('colours the level only when stdout is a terminal', async () => {
    const logger = createLogger('generator', 'info', 'pretty');
    logger.info('plain');
    await nextTurn();
    onTerminal(true);
    logger.warn('coloured');
    logger.error('red');
    await nextTurn();
    expect(withoutTime()).toEqual(['info  generator plain', `${ESC}[33mwarn ${ESC}[39m generator coloured`, `${ESC}[31merror${ESC}[39m generator red`]);
  });

  it('is not the default: without a format, lines stay JSON', async () => {
    createLogger('generator', 'info').info('job completed', { job_id: 'req_1' });
    await nextTurn();
    expect(JSON.parse(lines()[0]!)).toMatchObject({ level: 'info', service: 'generator', message: 'job completed', job_id: 'req_1' });
  });
});
