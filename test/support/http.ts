import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';

/** One part of a hand-built multipart body: a field, or a file when `filename` is set. */
export interface Part {
  name: string | Buffer;
  value: string | Buffer;
  filename?: string;
  type?: string;
}

/**
 * A multipart/form-data body built byte by byte, so that a test can put bytes in it that
 * FormData would re-encode (invalid UTF-8, lone surrogates) or leave the framing broken on purpose.
 */
export function multipartBody(parts: Part[], boundary = `----test${randomBytes(8).toString('hex')}`): { body: Buffer; contentType: string } {
  const chunks: Buffer[] = [];
  for (const part of parts) {
    const disposition = Buffer.concat([
      Buffer.from('content-disposition: form-data; name="'),
      Buffer.from(part.name),
      Buffer.from(part.filename === undefined ? '"' : `"; filename="${part.filename}"`),
    ]);
    chunks.push(Buffer.from(`--${boundary}\r\n`), disposition, Buffer.from('\r\n'));
    if (part.type) chunks.push(Buffer.from(`content-type: ${part.type}\r\n`));
    chunks.push(Buffer.from('\r\n'), Buffer.from(part.value), Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Sends bytes over a plain TCP connection (no HTTP client to tidy them up) and reads the answer until the server closes. */
export function rawHttp(port: number, request: string | Buffer, timeoutMs = 10_000): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no complete answer within ${timeoutMs} ms: ${Buffer.concat(chunks).toString('latin1').slice(0, 200)}`));
    }, timeoutMs);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => undefined); // the server may reset after answering; what arrived is what counts
    socket.on('close', () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString('utf8');
      const split = text.indexOf('\r\n\r\n');
      const head = split < 0 ? text : text.slice(0, split);
      const [statusLine, ...lines] = head.split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(':');
        if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      resolve({ status: Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1] ?? 0), headers, body: split < 0 ? '' : text.slice(split + 4) });
    });
    socket.write(request);
  });
}

/** What every error response must be: the documented shape, a request id, and text any strict JSON parser reads. */
export function expectApiError(
  res: { status: number; headers: Headers | Record<string, string>; json?: any; text?: string; body?: string },
  status: number,
  error: { type?: string; code?: string; param?: string | null } = {},
): void {
  const header = (name: string) => (res.headers instanceof Headers ? res.headers.get(name) : res.headers[name]);
  const text = res.text ?? res.body ?? '';
  const json = res.json ?? JSON.parse(text);
  expect({ status: res.status, ...json.error }).toMatchObject({ status, ...error });
  expect(Object.keys(json)).toEqual(['error']);
  expect(Object.keys(json.error).sort()).toEqual(['code', 'message', 'param', 'type']);
  expect(typeof json.error.message).toBe('string');
  expect(header('x-request-id')).toMatch(/^req_[a-z0-9]+$/);
  // An escaped lone surrogate is valid JSON text but breaks strict decoders (serde_json, Go).
  expect(text).not.toMatch(/\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F])/);
  expect(text).not.toMatch(/(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}/);
}
