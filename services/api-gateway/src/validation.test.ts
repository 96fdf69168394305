import { ApiError } from './http/api-error';
import { parseImageRequest, parseRemixRequest, parseVideoRequest, type ImageOperation } from './validation';

/** The error a parse throws, as the client sees it. */
function refusal(parse: () => unknown): { status: number; param: string | null; code: string | null; message: string } {
  try {
    parse();
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    return { status: err.status, param: err.param, code: err.code, message: err.message };
  }
  throw new Error('the parse accepted what it should refuse');
}

const image = (fields: Record<string, unknown>, operation: ImageOperation = 'generation') => parseImageRequest({ prompt: 'a red kite', ...fields }, operation);

describe('image parameters of the openai SDK', () => {
  const both: ImageOperation[] = ['generation', 'edit'];

  it.each([
    ['generation', ['standard', 'hd', 'low', 'medium', 'high']],
    ['edit', ['standard', 'low', 'medium', 'high']],
  ] as const)('%s takes quality %j', (operation, values) => {
    for (const quality of values) expect(image({ quality }, operation).quality).toBe(quality);
  });

  it.each(both)('%s takes every background with png and webp, and opaque with jpeg', (operation) => {
    for (const output_format of ['png', 'webp']) {
      for (const background of ['transparent', 'opaque']) expect(image({ background, output_format }, operation).background).toBe(background);
    }
    expect(image({ background: 'opaque', output_format: 'jpeg' }, operation).background).toBe('opaque');
  });

  it.each(both)('%s refuses a transparent background in a jpeg, naming background', (operation) => {
    expect(refusal(() => image({ background: 'transparent', output_format: 'jpeg' }, operation))).toMatchObject({
      status: 400,
      param: 'background',
      code: 'invalid_value',
      message: expect.stringMatching(/png.*webp/),
    });
  });

  it.each(both)('%s takes output_compression 0 to 100, as a number or as a form field', (operation) => {
    expect(image({ output_compression: 0, output_format: 'jpeg' }, operation).output_compression).toBe(0);
    expect(image({ output_compression: 100, output_format: 'webp' }, operation).output_compression).toBe(100);
    expect(image({ output_compression: '35', output_format: 'webp' }, operation).output_compression).toBe(35);
  });

  it.each([
    ['quality', 'ultra'],
    ['background', 'clear'],
    ['output_compression', 101],
    ['output_compression', -1],
    ['output_compression', 12.5],
    ['output_compression', 'high'],
    ['partial_images', 4],
    ['partial_images', -1],
    ['stream', 'sometimes'],
    ['quality', 7],
  ])('refuses %s = %j with a 400 naming it', (param, value) => {
    for (const operation of both) {
      expect(refusal(() => image({ [param]: value }, operation))).toMatchObject({ status: 400, param, code: 'invalid_value' });
    }
  });

  it.each([
    ['generation', 'moderation', 'strict'],
    ['generation', 'style', 'photographic'],
    ['edit', 'input_fidelity', 'medium'],
  ] as const)('%s refuses %s = %j with a 400 naming it', (operation, param, value) => {
    expect(refusal(() => image({ [param]: value }, operation))).toMatchObject({ status: 400, param, code: 'invalid_value' });
  });

  it('keeps each endpoint to its own parameters, as the SDK types them', () => {
    expect(refusal(() => image({ quality: 'hd' }, 'edit'))).toMatchObject({ status: 400, param: 'quality', code: 'invalid_value' });
    for (const param of ['moderation', 'style']) {
      expect(refusal(() => image({ [param]: 'auto' }, 'edit'))).toMatchObject({ status: 400, param, code: 'unknown_parameter' });
    }
    expect(refusal(() => image({ input_fidelity: 'high' }, 'generation'))).toMatchObject({ status: 400, param: 'input_fidelity', code: 'unknown_parameter' });
  });

  it.each(both)('%s refuses stream: true (as JSON or as a form field) and takes stream: false', (operation) => {
    for (const stream of [true, 'true']) {
      const error = refusal(() => image({ stream }, operation));
      expect(error).toMatchObject({ status: 400, param: 'stream', code: 'unsupported_value' });
      expect(error.message).toMatch(/[Ss]treaming is not offered/);
    }
    for (const stream of [false, 'false']) expect(() => image({ stream }, operation)).not.toThrow();
  });

  it('accepts what it ignores, and keeps it for the Idempotency-Key fingerprint', () => {
    expect(image({ moderation: 'low', style: 'vivid', user: 'u-1', partial_images: 2 }).ignored).toEqual({
      moderation: 'low',
      style: 'vivid',
      user: 'u-1',
      partial_images: 2,
    });
    expect(image({ input_fidelity: 'high', partial_images: 0 }, 'edit').ignored).toEqual({ input_fidelity: 'high', partial_images: 0 });
  });

  it('reads null and a documented default as leaving the parameter out', () => {
    const plain = image({});
    const spelledOut = image({ quality: 'auto', background: 'auto', moderation: 'auto', stream: false });
    const nulls = image({
      quality: null,
      background: null,
      moderation: null,
      style: null,
      output_compression: null,
      partial_images: null,
      stream: null,
      n: null,
      size: null,
      response_format: null,
      output_format: null,
      model: null,
    });
    expect(spelledOut).toEqual(plain);
    expect(nulls).toEqual(plain);
    expect(image({ input_fidelity: 'low' }, 'edit')).toEqual(image({}, 'edit'));
    // The fingerprint hashes the JSON of the parameters: a request without them hashes as it did before they existed.
    expect(Object.keys(JSON.parse(JSON.stringify(plain)))).toEqual([
      'model',
      'prompt',
      'n',
      'size',
      'response_format',
      'output_format',
      'callback_url',
      'seed',
    ]);
  });

  it('still refuses what no endpoint takes, and null where the SDK never sends it', () => {
    expect(refusal(() => image({ quantity: 2 }))).toMatchObject({ status: 400, param: 'quantity', code: 'unknown_parameter' });
    expect(refusal(() => image({ prompt: null }))).toMatchObject({ status: 400, param: 'prompt' });
  });
});

describe('video parameters', () => {
  it('keeps user, so that the Idempotency-Key fingerprint covers it', () => {
    expect(parseVideoRequest({ prompt: 'waves', user: 'u-7' }).user).toBe('u-7');
    expect(JSON.stringify(parseVideoRequest({ prompt: 'waves' }))).not.toContain('user');
  });
});

describe('remix parameters', () => {
  it('takes a prompt and an optional callback_url', () => {
    expect(parseRemixRequest({ prompt: ' a storm rolls in ' })).toEqual({ prompt: 'a storm rolls in', callback_url: null });
    expect(parseRemixRequest({ prompt: 'p', callback_url: 'https://hooks.example.com/x' })).toEqual({
      prompt: 'p',
      callback_url: 'https://hooks.example.com/x',
    });
  });

  it.each([
    [{}, 'prompt', 'missing_required_parameter'],
    [{ prompt: '   ' }, 'prompt', 'invalid_value'],
    [{ prompt: 'p', callback_url: 42 }, 'callback_url', 'invalid_callback_url'],
    [{ prompt: 'p', seconds: 8 }, 'seconds', 'unknown_parameter'],
    [{ prompt: 'p', model: 'motion-1' }, 'model', 'unknown_parameter'],
  ])('refuses %j naming %s', (body, param, code) => {
    expect(refusal(() => parseRemixRequest(body))).toMatchObject({ status: 400, param, code });
  });
});
