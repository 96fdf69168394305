import { request } from 'node:http';
import { readBody } from '../../support/stack';

/**
 * A browser's view of the dashboard API: a cookie jar of one cookie, and the CSRF token the page
 * would hold. With `localAddress` (another loopback address, e.g. 127.0.0.2) its requests come from
 * there: a browser somewhere else, as the gateway sees it.
 */
export class DashboardClient {
  cookie: string | undefined;
  csrf: string | undefined;

  constructor(
    private readonly baseUrl: string,
    private readonly localAddress?: string,
  ) {}

  /** A call to `/dashboard/api<path>`; state-changing calls carry the CSRF token unless `csrf` says otherwise, reads only when `csrf` gives one. */
  async call(method: string, path: string, opts: { json?: unknown; csrf?: string | null; headers?: Record<string, string> } = {}) {
    const headers = new Headers(opts.headers);
    if (this.cookie) headers.set('cookie', this.cookie);
    const csrf = opts.csrf === undefined ? this.csrf : opts.csrf;
    if (csrf && (method !== 'GET' || opts.csrf !== undefined)) headers.set('x-csrf-token', csrf);
    let body: string | undefined;
    if (opts.json !== undefined) {
      headers.set('content-type', 'application/json');
      body = JSON.stringify(opts.json);
    }
    const url = `${this.baseUrl}/dashboard/api${path}`;
    const res = this.localAddress
      ? await fetchFrom(this.localAddress, url, method, headers, body)
      : await fetch(url, { method, headers, body, redirect: 'manual' });
    const setCookie = res.headers.get('set-cookie');
    if (setCookie) {
      const [pair] = setCookie.split(';');
      this.cookie = pair.endsWith('=') ? undefined : pair;
    }
    return { status: res.status, headers: res.headers, ...(await readBody(res)), setCookie };
  }

  async signIn(email: string, password: string) {
    const res = await this.call('POST', '/session', { json: { email, password } });
    if (res.status === 200) this.csrf = res.json.csrf_token;
    return res;
  }

  static async signedIn(baseUrl: string, email: string, password: string): Promise<DashboardClient> {
    const client = new DashboardClient(baseUrl);
    const res = await client.signIn(email, password);
    if (res.status !== 200) throw new Error(`sign-in answered ${res.status}: ${res.text}`);
    return client;
  }
}

/** fetch's answer to a request sent from `localAddress` (fetch itself cannot choose the source address). */
function fetchFrom(localAddress: string, url: string, method: string, headers: Headers, body: string | undefined): Promise<Response> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers: Object.fromEntries(headers), localAddress }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const answer = new Headers();
        for (const [name, value] of Object.entries(res.headers)) if (value !== undefined) answer.set(name, Array.isArray(value) ? value.join(', ') : value);
        resolve(new Response(res.statusCode === 204 ? null : Buffer.concat(chunks), { status: res.statusCode, headers: answer }));
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}
