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
