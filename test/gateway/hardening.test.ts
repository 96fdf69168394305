import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { LinkSigner, type VideoJob } from '@media/domain';
import { loadLinkSigningKey } from '@media/storage';
import { expectApiError, multipartBody, rawHttp, type Part } from '../support/http';
import { api, eventually, TestStack, type TestWorkspace } from '../support/stack';

/**
 * Hostile input at the API edge: whatever arrives, the answer is a 4xx in the documented error
 * shape or an accepted job that completes; never a 500, a crash, or a job that cannot be stored.
 */
let stack: TestStack;
let ws: TestWorkspace;
let call: ReturnType<typeof api>;

/** A 1x1 PNG: every edit below needs an input image, none needs a big one. */
const pngBytes = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');

/** Limits high enough for hundreds of calls; test/gateway/limits.test.ts covers the limits. */
const SETTINGS = {
  RATE_LIMIT_CREATE_PER_MINUTE: '100000',
  RATE_LIMIT_READ_PER_MINUTE: '100000',
  MAX_WAITING_JOBS_PER_WORKSPACE: '100000',
  MAX_UPLOAD_BYTES: '200000',
};

beforeAll(async () => {
  stack = await TestStack.start(['api-gateway', 'generator'], SETTINGS);
  ws = await stack.createWorkspace('hardening');
  call = api(stack, ws.apiKey);
});

afterAll(async () => {
  await stack?.stop();
});

/** Runs `task` over `items`, a few at a time: the generator is the bottleneck, not the client. */
async function inPool<T>(items: T[], size: number, task: (item: T) => Promise<void>): Promise<void> {
  const queue = [...items];
  await Promise.all(
    Array.from({ length: size }, async () => {
      for (let item = queue.shift(); item !== undefined; item = queue.shift()) await task(item);
    }),
  );
}

const port = () => Number(new URL(stack.baseUrl).port);
const alive = async () => expect((await fetch(`${stack.baseUrl}/healthz`)).status).toBe(200);

describe('invalid Unicode', () => {
  /**
   * One kind of bad text: bytes put into an otherwise valid value, at its start, middle or end. In
   * JSON they sit inside the string literal (so `\ud800` is the escape); in a form they are the raw
   * field bytes. Escapes exist only in JSON; a lone surrogate reaches a form as CESU-8 bytes.
   */
  interface Kind {
    name: string;
    bytes: Buffer;
    at: 'start' | 'middle' | 'end';
    json: boolean;
    form: boolean;
  }
  const escape = (name: string, text: string, at: Kind['at'] = 'middle'): Kind => ({ name, bytes: Buffer.from(text), at, json: true, form: false });
  const raw = (name: string, bytes: number[], at: Kind['at'] = 'middle'): Kind => ({ name, bytes: Buffer.from(bytes), at, json: true, form: true });
  const KINDS: Kind[] = [
    escape('lone high surrogate at the start', '\\ud800', 'start'),
    escape('lone high surrogate in the middle', '\\ud800'),
    escape('lone high surrogate at the end', '\\udbff', 'end'),
    escape('lone low surrogate at the start', '\\udc00', 'start'),
    escape('lone low surrogate at the end', '\\udfff', 'end'),
    escape('reversed surrogate pair', '\\udc00\\ud800'),
    escape('escaped NUL', '\\u0000'),
    escape('escaped noncharacter U+FFFF', '\\uffff', 'end'),
    escape('escaped noncharacter U+FDD0', '\\ufdd0'),
    raw('raw NUL byte', [0x00]),
    raw('byte 0xFF', [0xff]),
    raw('byte 0xFE at the start', [0xfe], 'start'),
    raw('lone continuation byte', [0x80], 'start'),
    raw('overlong encoding of "/"', [0xc0, 0xaf]),
    raw('overlong encoding of NUL', [0xc0, 0x80], 'end'),
    raw('truncated three-byte sequence at the end', [0xe2, 0x82], 'end'),
    raw('truncated four-byte sequence in the middle', [0xf0, 0x9f, 0x98]),
    raw('surrogate encoded as UTF-8 (CESU-8)', [0xed, 0xa0, 0x80]),
    raw('code point above U+10FFFF', [0xf4, 0x90, 0x80, 0x80]),
    raw('noncharacter U+FFFF as UTF-8', [0xef, 0xbf, 0xbf]),
    raw('U+FFFD as UTF-8', [0xef, 0xbf, 0xbd]),
  ];

  const insert = (valid: string, kind: Kind): Buffer => {
    const text = Buffer.from(valid);
    const at = kind.at === 'start' ? 0 : kind.at === 'end' ? text.length : Math.floor(text.length / 2);
    return Buffer.concat([text.subarray(0, at), kind.bytes, text.subarray(at)]);
  };

  /** What the server decodes: the JSON string literal's value, or the form field as UTF-8 (undefined: not JSON at all). */
  const decoded = (bytes: Buffer, transport: 'json' | 'form'): string | undefined => {
    if (transport === 'form') return bytes.toString('utf8');
    try {
      return JSON.parse(`"${bytes.toString('utf8')}"`) as string;
    } catch {
      return undefined;
    }
  };

  const FREE_TEXT = new Set(['prompt', 'user']);
  const imageFields = {
    model: 'pixel-1',
    prompt: 'a lighthouse at dusk',
    size: '256x256',
    response_format: 'url',
    output_format: 'png',
    callback_url: 'https://93.184.215.14/hook',
    user: 'user-1',
    n: '1',
    seed: '42',
    quality: 'low',
    background: 'opaque',
    output_compression: '50',
    partial_images: '1',
    stream: 'false',
  };
  const generationFields = { ...imageFields, moderation: 'low', style: 'vivid' };
  const editFields = { ...imageFields, input_fidelity: 'high' };
  const videoFields = {
    model: 'motion-1',
    prompt: 'a fox in the snow',
    seconds: '1',
    size: '640x360',
    resolution: '360p',
    aspect_ratio: '16:9',
    generate_audio: 'false',
    callback_url: 'https://93.184.215.14/hook',
    user: 'user-1',
    seed: '7',
  };
  const remixFields = { prompt: 'a fox in a storm', callback_url: 'https://93.184.215.14/hook' };
  /** Stands for a completed video's id in a remix path. */
  const SOURCE = '{source}';
  let sourceId = '';

  /**
   * The video calls go to a gateway of their own, with no generator: an accepted video stays queued
   * there, as the gateway stored it, and is not rendered. What a video's prompt meets in the generator
   * is what an image's meets (the stored record, read the same way, and the prompt interpreter; no
   * prompt text reaches ffmpeg): the images, each rendered with one bad string, and one video per
   * transport carrying every bad string at once (the last test here) show such jobs completing.
   */
  let videoStack: TestStack;
  let videoCall: ReturnType<typeof api>;

  interface Endpoint {
    path: string;
    transport: 'json' | 'form';
    fields: Record<string, string>;
    /** The valid request the bad value is put into. */
    base: Record<string, string>;
  }
  const ENDPOINTS: Endpoint[] = [
    { path: '/v1/images/generations', transport: 'json', fields: generationFields, base: { prompt: 'unicode', size: '256x256' } },
    { path: '/v1/images/generations', transport: 'form', fields: generationFields, base: { prompt: 'unicode', size: '256x256' } },
    { path: '/v1/images/edits', transport: 'json', fields: editFields, base: { prompt: 'unicode', size: '256x256' } },
    { path: '/v1/images/edits', transport: 'form', fields: editFields, base: { prompt: 'unicode', size: '256x256' } },
    { path: '/v1/videos', transport: 'json', fields: videoFields, base: { prompt: 'unicode', seconds: '1', size: '640x360' } },
    { path: '/v1/videos', transport: 'form', fields: videoFields, base: { prompt: 'unicode', seconds: '1', size: '640x360' } },
    { path: `/v1/videos/${SOURCE}/remix`, transport: 'json', fields: remixFields, base: { prompt: 'unicode' } },
    { path: `/v1/videos/${SOURCE}/remix`, transport: 'form', fields: remixFields, base: { prompt: 'unicode' } },
  ];

  beforeAll(async () => {
    videoStack = await TestStack.start(['api-gateway'], SETTINGS, { inProcess: true });
    const videoWs = await videoStack.createWorkspace('hardening-videos');
    videoCall = api(videoStack, videoWs.apiKey);
    // A one-second video to remix: every remix below inherits its duration and size. The generator's
    // part, as in test/gateway/limits.test.ts: the record finished as the generator finishes it.
    const created = await videoCall('/v1/videos', { method: 'POST', json: { prompt: 'a fox in the snow', seconds: 1, size: '640x360' } });
    const source = (await videoStack.jobs.get(created.json.id)) as VideoJob;
    await videoStack.jobs.finish(
      { ...source, status: 'completed', progress: 100, finished_ms: Date.now(), cost: 0.1, output: `${videoWs.workspaceId}/${source.id}/video.mp4` },
      null,
    );
    sourceId = source.id;
    expect((await videoCall(`/v1/videos/${sourceId}`)).json.status).toBe('completed');
  });

  afterAll(async () => {
    await videoStack?.stop();
  });

  function request(endpoint: Endpoint, field: string, value: Buffer): { body: Buffer; contentType: string } {
    const others = Object.entries(endpoint.base).filter(([name]) => name !== field);
    const edit = endpoint.path.endsWith('/edits');
    if (endpoint.transport === 'form') {
      const parts: Part[] = [...others.map(([name, v]) => ({ name, value: v })), { name: field, value }];
      if (edit) parts.push({ name: 'image', value: pngBytes, filename: 'in.png', type: 'image/png' });
      return multipartBody(parts);
    }
    const fields = Object.fromEntries(others) as Record<string, unknown>;
    if (edit) fields.image = `data:image/png;base64,${pngBytes.toString('base64')}`;
    // `{"a":1` then `,"field":"…"}`, or `{"field":"…"}` when the field is the only one.
    const head = JSON.stringify(fields).slice(0, -1);
    const open = head === '{' ? head : `${head},`;
    return { body: Buffer.concat([Buffer.from(`${open}"${field}":"`), value, Buffer.from('"}')]), contentType: 'application/json' };
  }

  const cases = ENDPOINTS.flatMap((endpoint) =>
    Object.keys(endpoint.fields).flatMap((field) =>
      KINDS.filter((kind) => (endpoint.transport === 'json' ? kind.json : kind.form)).map((kind) => ({ endpoint, field, kind })),
    ),
  );

  it(`answers every string field of every creation call (${cases.length} cases) with a 400, an image that completes, or a video stored with its text`, async () => {
    const failures: string[] = [];
    const videos: { id: string; label: string; prompt: string }[] = [];
    await inPool(cases, 4, async ({ endpoint, field, kind }) => {
      const label = `${endpoint.path} (${endpoint.transport}) ${field}: ${kind.name}`;
      const value = insert(endpoint.fields[field], kind);
      const { body, contentType } = request(endpoint, field, value);
      const isVideo = endpoint.path.startsWith('/v1/videos');
      const res = await (isVideo ? videoCall : call)(endpoint.path.replace(SOURCE, sourceId), {
        method: 'POST',
        body,
        headers: { 'content-type': contentType },
      });
      const text = decoded(value, endpoint.transport);
      try {
        if (text === undefined) {
          // A raw control byte inside a JSON string is not JSON.
          expectApiError(res, 400, { type: 'invalid_request_error', code: 'invalid_json' });
        } else if (FREE_TEXT.has(field)) {
          expect(res.status).toBe(200);
          const expected = text.toWellFormed().trim();
          if (isVideo) {
            const prompt = field === 'prompt' ? expected : endpoint.base.prompt;
            expect(res.json.prompt).toBe(prompt);
            videos.push({ id: res.json.id, label, prompt });
          } else {
            expect(res.json.status).toBe('completed');
            if (field === 'prompt') expect((await stack.jobs.get(res.json.id))?.prompt).toBe(expected);
          }
        } else {
          const code = field === 'callback_url' ? 'invalid_callback_url' : 'invalid_value';
          expectApiError(res, 400, { type: 'invalid_request_error', param: field, code });
        }
      } catch (err) {
        failures.push(`${label} → ${res.status} ${res.text.slice(0, 200)}\n${String(err).slice(0, 600)}`);
      }
    });
    expect(failures).toEqual([]);

    // Every accepted video is stored readably, with its text: the record as the generator would read
    // it, and the API's answer made from it.
    for (const { id, label, prompt } of videos) {
      const res = await videoCall(`/v1/videos/${id}`);
      expect([label, res.status, res.json.status, res.json.prompt]).toEqual([label, 200, 'queued', prompt]);
      expect([label, (await videoStack.jobs.get(id))?.prompt]).toEqual([label, prompt]);
    }
    await alive();
    expect((await fetch(`${videoStack.baseUrl}/healthz`)).status).toBe(200);
  }, 300_000);

  it.each(['json', 'form'] as const)('completes a video whose prompt carries every bad string of a %s body at once', async (transport) => {
    const endpoint = ENDPOINTS.find((e) => e.path === '/v1/videos' && e.transport === transport)!;
    // Each kind at its place, a space either side: two escapes side by side would make a valid surrogate pair.
    const kinds = KINDS.filter((kind) => (transport === 'json' ? kind.json : kind.form) && decoded(kind.bytes, transport) !== undefined);
    const at = (where: Kind['at']) => kinds.filter((kind) => kind.at === where).flatMap((kind) => [kind.bytes, Buffer.from(' ')]);
    const valid = endpoint.fields.prompt;
    const middle = valid.indexOf(' ', valid.length / 2);
    const value = Buffer.concat([...at('start'), Buffer.from(`${valid.slice(0, middle)} `), ...at('middle'), Buffer.from(valid.slice(middle)), ...at('end')]);
    const expected = decoded(value, transport)!.toWellFormed().trim();
    const { body, contentType } = request(endpoint, 'prompt', value);
    const res = await call('/v1/videos', { method: 'POST', body, headers: { 'content-type': contentType } });
    expect([res.status, res.json.prompt]).toEqual([200, expected]);
    const video = await eventually(
      async () => {
        const got = await call(`/v1/videos/${res.json.id}`);
        return got.json.status === 'completed' || got.json.status === 'failed' ? got.json : undefined;
      },
      90_000,
      'the video to finish',
    );
    expect([video.status, video.prompt]).toEqual(['completed', expected]);
  });

  it('refuses an Idempotency-Key that is not printable ASCII', async () => {
    // The headers arrive as Latin-1; UTF-8 bytes or 0xFF are not a key a client meant.
    for (const key of ['caf\u00c3\u00a9', 'key-\u00ff', 'tab\tkey', '']) {
      const res = await call('/v1/videos', { method: 'POST', json: { prompt: 'idem', seconds: 1, size: '640x360' }, headers: { 'idempotency-key': key } });
      expectApiError(res, 400, { code: 'invalid_idempotency_key' });
    }
    const nul = await rawHttp(
      port(),
      `POST /v1/videos HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ws.apiKey}\r\nIdempotency-Key: a\u0000b\r\nContent-Length: 2\r\n\r\n{}`,
    );
    expectApiError(nul, 400);
    const ok = await call('/v1/videos', {
      method: 'POST',
      json: { prompt: 'idem', seconds: 1, size: '640x360' },
      headers: { 'idempotency-key': 'plain-ascii key 1' },
    });
    expect(ok.status).toBe(200);
  });

  it('keeps error bodies well-formed when a parameter name is bad Unicode', async () => {
    const res = await call('/v1/images/generations', {
      method: 'POST',
      body: '{"prompt":"x","bad\\ud800key":1}',
      headers: { 'content-type': 'application/json' },
    });
    expectApiError(res, 400, { code: 'unknown_parameter', param: 'bad\ufffdkey' });
    const form = multipartBody([
      { name: 'prompt', value: 'x' },
      { name: Buffer.from([0x62, 0xff]), value: 'y' },
    ]);
    const formRes = await call('/v1/videos', { method: 'POST', body: form.body, headers: { 'content-type': form.contentType } });
    expectApiError(formRes, 400, { code: 'unknown_parameter' });
  });

  it('answers ids and query values that are not UTF-8 with 400', async () => {
    for (const path of ['/v1/videos/%ED%A0%80', '/v1/images/%FF', '/v1/videos/%C0%AF/content', '/v1/models/%F0%9F']) {
      const res = await call(path);
      expect([path, res.status]).toEqual([path, 400]);
      expectApiError(res, 400, { code: 'invalid_request' });
    }
    expectApiError(await call('/v1/videos?order=%FF'), 400, { param: 'order' });
    expectApiError(await call('/v1/videos/video_x/content?variant=%ED%A0%80'), 400, { param: 'variant' });
  });
});

describe('malformed multipart', () => {
  const boundary = 'b0undary';
  const type = `multipart/form-data; boundary=${boundary}`;
  const part = (name: string, value: string) => `--${boundary}\r\ncontent-disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  const many = (n: number, make: (i: number) => string) => Array.from({ length: n }, (_, i) => make(i)).join('');
  const filePart = (i: number) =>
    `--${boundary}\r\ncontent-disposition: form-data; name="image"; filename="${i}.png"\r\ncontent-type: image/png\r\n\r\n${pngBytes.toString('latin1')}\r\n`;

  const shapes: [string, string, string | Buffer][] = [
    ['no boundary parameter', 'multipart/form-data', part('prompt', 'x')],
    ['an empty boundary', 'multipart/form-data; boundary=', part('prompt', 'x')],
    ['a body that ends before the closing boundary', type, `${part('prompt', 'x')}--${boundary}\r\ncontent-disposition: form-data; name="size"\r\n\r\n256x`],
    ['JSON sent as multipart', type, '{"prompt":"a lighthouse"}'],
    ['a boundary that never appears', type, `--other\r\ncontent-disposition: form-data; name="prompt"\r\n\r\nx\r\n--other--\r\n`],
    ['a part header without a colon', type, `--${boundary}\r\ncontent-disposition form-data name=prompt\r\n\r\nx\r\n--${boundary}--\r\n`],
    ['a part without a blank line after its headers', type, `--${boundary}\r\ncontent-disposition: form-data; name="prompt"\r\nx\r\n--${boundary}--\r\n`],
    ['a part with no name', type, `--${boundary}\r\ncontent-disposition: form-data\r\n\r\nx\r\n--${boundary}--\r\n`],
    ['an empty body', type, ''],
    ['too many fields', type, `${part('prompt', 'x')}${many(60, (i) => part(`f${i}`, 'v'))}--${boundary}--\r\n`],
    ['a field name too long', type, `${part('p'.repeat(200), 'x')}--${boundary}--\r\n`],
    ['a field value over 1 MiB', type, `${part('prompt', 'x'.repeat(1024 * 1024 + 10))}--${boundary}--\r\n`],
    ['too many files', type, `${part('prompt', 'x')}${many(20, filePart)}--${boundary}--\r\n`],
  ];

  it.each(shapes)('answers %s with 400 invalid_multipart on every multipart endpoint', async (_name, contentType, body) => {
    for (const path of ['/v1/images/generations', '/v1/images/edits', '/v1/videos']) {
      const res = await call(path, {
        method: 'POST',
        body: typeof body === 'string' ? Buffer.from(body, 'latin1') : body,
        headers: { 'content-type': contentType },
      });
      try {
        expectApiError(res, 400, { type: 'invalid_request_error' });
        // A well-framed body whose fields are merely wrong is answered by validation instead.
        expect(['invalid_multipart', 'missing_required_parameter', 'unknown_parameter']).toContain(res.json.error.code);
      } catch (err) {
        throw new Error(`${path}: ${res.status} ${res.text}\n${String(err)}`);
      }
    }
    await alive();
  });

  it('answers a file where only fields are taken with 400, and an oversized file with 413', async () => {
    const withFile = multipartBody([
      { name: 'prompt', value: 'x' },
      { name: 'image', value: pngBytes, filename: 'a.png', type: 'image/png' },
    ]);
    for (const path of ['/v1/images/generations', '/v1/videos']) {
      const res = await call(path, { method: 'POST', body: withFile.body, headers: { 'content-type': withFile.contentType } });
      expectApiError(res, 400, { code: 'invalid_multipart', param: 'image' });
    }
    const big = multipartBody([
      { name: 'prompt', value: 'x' },
      { name: 'image', value: Buffer.concat([pngBytes, Buffer.alloc(250_000)]), filename: 'a.png', type: 'image/png' },
    ]);
    const res = await call('/v1/images/edits', { method: 'POST', body: big.body, headers: { 'content-type': big.contentType } });
    expectApiError(res, 413, { code: 'file_too_large', param: 'image' });
  });

  it('answers a multipart body with a Content-Encoding with 415, as it cannot be read as one', async () => {
    const form = multipartBody([
      { name: 'prompt', value: 'x' },
      { name: 'image', value: pngBytes, filename: 'a.png', type: 'image/png' },
    ]);
    for (const encoding of ['gzip', 'br', 'x-unknown']) {
      const res = await call('/v1/images/edits', {
        method: 'POST',
        body: form.body,
        headers: { 'content-type': form.contentType, 'content-encoding': encoding },
      });
      expectApiError(res, 415, { type: 'invalid_request_error', code: 'unsupported_media_type' });
    }
    const plain = await call('/v1/images/edits', {
      method: 'POST',
      body: form.body,
      headers: { 'content-type': form.contentType, 'content-encoding': 'identity' },
    });
    expect(plain.status).toBe(200);
  });

  it('answers the framing errors with invalid_multipart specifically', async () => {
    for (const [name, contentType, body] of shapes.filter(([name]) => !/no name|empty body|name too long/.test(name))) {
      const res = await call('/v1/images/edits', { method: 'POST', body: Buffer.from(body as string, 'latin1'), headers: { 'content-type': contentType } });
      expect([name, res.json.error.code]).toEqual([name, 'invalid_multipart']);
    }
  });
});

describe('prototype property names', () => {
  const NAMES = [
    'constructor',
    '__proto__',
    'toString',
    'hasOwnProperty',
    'valueOf',
    'isPrototypeOf',
    'propertyIsEnumerable',
    'toLocaleString',
    '__defineGetter__',
  ];
  const enumerated: [string, string][] = [
    ['/v1/images/generations', 'model'],
    ['/v1/images/generations', 'size'],
    ['/v1/images/generations', 'response_format'],
    ['/v1/images/generations', 'output_format'],
    ['/v1/images/generations', 'n'],
    ['/v1/images/generations', 'seed'],
    ['/v1/images/generations', 'callback_url'],
    ['/v1/images/generations', 'quality'],
    ['/v1/images/generations', 'background'],
    ['/v1/images/generations', 'moderation'],
    ['/v1/images/generations', 'style'],
    ['/v1/images/generations', 'output_compression'],
    ['/v1/images/generations', 'partial_images'],
    ['/v1/images/generations', 'stream'],
    ['/v1/images/edits', 'size'],
    ['/v1/images/edits', 'model'],
    ['/v1/images/edits', 'response_format'],
    ['/v1/images/edits', 'output_format'],
    ['/v1/images/edits', 'quality'],
    ['/v1/images/edits', 'background'],
    ['/v1/images/edits', 'input_fidelity'],
    ['/v1/videos', 'model'],
    ['/v1/videos', 'size'],
    ['/v1/videos', 'resolution'],
    ['/v1/videos', 'aspect_ratio'],
    ['/v1/videos', 'seconds'],
    ['/v1/videos', 'generate_audio'],
    ['/v1/videos', 'seed'],
    ['/v1/videos', 'callback_url'],
  ];

  it.each(NAMES)('refuses %s as the value of every enumerated field, in JSON and in forms', async (name) => {
    const dataUrl = `data:image/png;base64,${pngBytes.toString('base64')}`;
    for (const [path, field] of enumerated) {
      const json: Record<string, unknown> = { prompt: 'proto', [field]: name };
      if (path.endsWith('/edits')) json.image = dataUrl;
      const viaJson = await call(path, { method: 'POST', json });
      const parts: Part[] = [
        { name: 'prompt', value: 'proto' },
        { name: field, value: name },
      ];
      if (path.endsWith('/edits')) parts.push({ name: 'image', value: pngBytes, filename: 'a.png', type: 'image/png' });
      const form = multipartBody(parts);
      const viaForm = await call(path, { method: 'POST', body: form.body, headers: { 'content-type': form.contentType } });
      for (const res of [viaJson, viaForm]) {
        try {
          expect([400, 404]).toContain(res.status);
          expectApiError(res, res.status, { param: field });
        } catch (err) {
          throw new Error(`${path} ${field}=${name}: ${res.status} ${res.text}\n${String(err)}`);
        }
      }
    }
  });

  it.each(NAMES)('refuses %s in query values, ids and parameter names', async (name) => {
    expectApiError(await call(`/v1/videos?order=${name}`), 400, { param: 'order' });
    expectApiError(await call(`/v1/videos?limit=${name}`), 400, { param: 'limit' });
    expectApiError(await call(`/v1/videos?${name}=1`), 400);
    expectApiError(await call(`/v1/videos/video_x/content?variant=${name}`), 400, { param: 'variant' });
    for (const path of [`/v1/videos/${name}`, `/v1/videos/${name}/content`, `/v1/images/${name}`, `/v1/models/${name}`]) expectApiError(await call(path), 404);
    expectApiError(await call(`/v1/videos/${name}/remix`, { method: 'POST', json: { prompt: 'x' } }), 404);
    const asKey = await call('/v1/images/generations', {
      method: 'POST',
      body: `{"prompt":"x","${name}":{"polluted":true}}`,
      headers: { 'content-type': 'application/json' },
    });
    expectApiError(asKey, 400, { code: 'unknown_parameter', param: name });
    const form = multipartBody([
      { name: 'prompt', value: 'x' },
      { name: `${name}[polluted]`, value: 'yes' },
    ]);
    const asFormKey = await call('/v1/videos', { method: 'POST', body: form.body, headers: { 'content-type': form.contentType } });
    expectApiError(asFormKey, 400, { code: 'unknown_parameter' });
    // Nothing leaked onto the prototypes: a plain request still validates as before.
    const fine = await call('/v1/images/generations', { method: 'POST', json: { prompt: 'after', size: '256x256' } });
    expect(fine.status).toBe(200);
  });

  it('serves a file whose extension is a prototype name as plain bytes', async () => {
    const signer = new LinkSigner(await loadLinkSigningKey(stack.redis, stack.keys, undefined), stack.baseUrl, 3_600);
    for (const name of NAMES) {
      const key = `${ws.workspaceId}/proto/file.${name}`;
      await mkdir(join(stack.mediaDir, ws.workspaceId, 'proto'), { recursive: true });
      await writeFile(join(stack.mediaDir, key), 'bytes');
      const res = await fetch(signer.mint(key).url);
      expect([name, res.status, res.headers.get('content-type')]).toEqual([name, 200, 'application/octet-stream']);
    }
  });

  it('uses a prototype name as an Idempotency-Key like any other key', async () => {
    const headers = { 'idempotency-key': `__proto__` };
    const first = await call('/v1/videos', { method: 'POST', json: { prompt: 'proto key', seconds: 1, size: '640x360' }, headers });
    const again = await call('/v1/videos', { method: 'POST', json: { prompt: 'proto key', seconds: 1, size: '640x360' }, headers });
    expect([first.status, again.status, again.json.id]).toEqual([200, 200, first.json.id]);
  });
});

describe('callback_url', () => {
  const bad: [string, unknown][] = [
    ['over the length limit', `https://93.184.215.14/${'a'.repeat(2100)}`],
    ['a number', 5],
    ['a boolean', true],
    ['an object', { url: 'https://93.184.215.14/hook' }],
    ['an array', ['https://93.184.215.14/hook']],
    ['empty', ''],
  ];
  it.each(bad)('answers a callback_url that is %s with invalid_callback_url', async (_name, value) => {
    const dataUrl = `data:image/png;base64,${pngBytes.toString('base64')}`;
    for (const path of ['/v1/images/generations', '/v1/images/edits', '/v1/videos']) {
      const json: Record<string, unknown> = { prompt: 'cb', callback_url: value };
      if (path.endsWith('/edits')) json.image = dataUrl;
      expectApiError(await call(path, { method: 'POST', json }), 400, { type: 'invalid_request_error', param: 'callback_url', code: 'invalid_callback_url' });
    }
    if (typeof value === 'string') {
      const form = multipartBody([
        { name: 'prompt', value: 'cb' },
        { name: 'callback_url', value },
        { name: 'image', value: pngBytes, filename: 'a.png', type: 'image/png' },
      ]);
      const res = await call('/v1/images/edits', { method: 'POST', body: form.body, headers: { 'content-type': form.contentType } });
      expectApiError(res, 400, { param: 'callback_url', code: 'invalid_callback_url' });
    }
  });
});

describe('requests Node cannot parse', () => {
  const expectClosingError = (res: Awaited<ReturnType<typeof rawHttp>>, status: number, code: string) => {
    expectApiError(res, status, { type: 'invalid_request_error', code });
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers.connection).toBe('close');
  };

  it('answers headers over the limit with 431 in the error shape', async () => {
    const res = await rawHttp(port(), `GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(40_000)}\r\n\r\n`);
    expectClosingError(res, 431, 'request_header_fields_too_large');
  });

  it('answers a request line over the limit with 431 in the error shape', async () => {
    const res = await rawHttp(port(), `GET /v1/videos?after=${'a'.repeat(40_000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    expectClosingError(res, 431, 'request_header_fields_too_large');
  });

  it.each([
    ['a garbage request line', 'HELLO THERE\r\n\r\n'],
    ['an invalid method', 'G@T / HTTP/1.1\r\nHost: x\r\n\r\n'],
    ['a header without a colon', 'GET /healthz HTTP/1.1\r\nHost x\r\n\r\n'],
    ['a control character in a header', 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\u0001b\r\n\r\n'],
    ['a bad chunk size', 'POST /v1/videos HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n'],
    ['binary bytes', Buffer.from([0x16, 0x03, 0x01, 0x00, 0xa5, 0x01, 0x00, 0x00, 0xa1, 0x03, 0x03, 0x0d, 0x0a, 0x0d, 0x0a])],
  ])('answers %s with 400 in the error shape', async (_name, request) => {
    const res = await rawHttp(port(), request);
    expectClosingError(res, 400, 'invalid_http_request');
  });

  it.each([
    ['a CONNECT', 'CONNECT 127.0.0.1:1 HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n'],
    ['an HTTP/1.1 request without Host', 'GET /v1/models HTTP/1.1\r\nAuthorization: Bearer x\r\n\r\n'],
  ])('answers %s with 400 in the error shape', async (_name, request) => {
    const res = await rawHttp(port(), request);
    expectClosingError(res, 400, 'invalid_http_request');
    expect(res.headers['x-request-id']).toMatch(/^req_/);
  });

  it('answers a request without Host after the earlier requests of its connection, in order', async () => {
    const body = JSON.stringify({ prompt: 'first in line', size: '256x256' });
    const res = await rawHttp(
      port(),
      `POST /v1/images/generations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ws.apiKey}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}` +
        'GET /v1/models HTTP/1.1\r\n\r\n',
      60_000,
    );
    expect(res.status).toBe(200);
    expect(res.body).toMatch(/"b64_json"|"url"/);
    expect(res.body).toMatch(/HTTP\/1\.1 400 Bad Request[\s\S]*"code":"invalid_http_request"/);
  });

  it('serves an HTTP/1.0 request without Host, which may omit it', async () => {
    const res = await rawHttp(port(), 'GET /healthz HTTP/1.0\r\n\r\n');
    expect(res.status).toBe(200);
  });

  it('answers an Expect other than 100-continue with 417 in the error shape', async () => {
    const res = await rawHttp(
      port(),
      `POST /v1/videos HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ws.apiKey}\r\nExpect: foo\r\nContent-Length: 2\r\n\r\n{}`,
    );
    expectClosingError(res, 417, 'expectation_failed');
  });

  it('keeps serving afterwards', async () => {
    await alive();
    expect((await call('/v1/models')).status).toBe(200);
  });
});

describe('one Idempotency-Key sent by several requests at once', () => {
  const dataUrl = `data:image/png;base64,${pngBytes.toString('base64')}`;
  const edit = (as: ReturnType<typeof api>, key: string) =>
    as('/v1/images/edits', { method: 'POST', json: { prompt: 'a fox', size: '256x256', image: dataUrl }, headers: { 'idempotency-key': key } });
  const imageJobs = async (workspaceId: string) => (await stack.jobs.list(workspaceId, 'image', { limit: 10, order: 'desc' })).ids;

  it('makes one job of an edit sent twelve times at once: the others replay it or are told to retry, none fails', async () => {
    const other = await stack.createWorkspace('edit-race');
    const as = api(stack, other.apiKey);
    const answers = await Promise.all(Array.from({ length: 12 }, () => edit(as, 'race-1')));
    for (const res of answers) {
      if (res.status === 409) {
        expectApiError(res, 409, { type: 'conflict_error', code: 'idempotency_key_in_use' });
        expect(res.headers.get('retry-after')).toBe('1');
      } else {
        expect([res.status, res.text]).toEqual([200, expect.any(String)]);
      }
    }
    expect(answers.filter((res) => res.status === 200 && res.headers.get('idempotent-replayed') !== 'true')).toHaveLength(1);
    const ids = await imageJobs(other.workspaceId);
    expect(ids).toHaveLength(1);
    // Its inputs were written once and stayed: the generator read them and made the image.
    expect((await stack.jobs.get(ids[0]!))?.status).toBe('completed');
    const again = await edit(as, 'race-1');
    expect([again.status, again.headers.get('idempotent-replayed')]).toEqual([200, 'true']);
    expect(await imageJobs(other.workspaceId)).toEqual(ids);
  });

  it('gives the key back when the edit is refused before its job is stored, so that a retry makes it', async () => {
    const other = await stack.createWorkspace('edit-refused');
    const as = api(stack, other.apiKey);
    await stack.redis.hset(stack.keys.workspaceLimits(other.workspaceId), 'max_waiting_jobs', '0');
    expectApiError(await edit(as, 'refused-1'), 429, { code: 'too_many_pending_jobs' });
    await stack.redis.hdel(stack.keys.workspaceLimits(other.workspaceId), 'max_waiting_jobs');
    const retried = await edit(as, 'refused-1');
    expect([retried.status, retried.headers.get('idempotent-replayed')]).toEqual([200, null]);
    expect(await imageJobs(other.workspaceId)).toHaveLength(1);
  });
});
