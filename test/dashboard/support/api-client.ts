import { readBody } from '../../support/stack';

/** A browser's view of the dashboard API: a cookie jar of one cookie, and the CSRF token the page would hold. */
export class DashboardClient {
  cookie: string | undefined;
  csrf: string | undefined;

  constructor(private readonly baseUrl: string) {}

  /** A call to `/dashboard/api<path>`; state-changing calls carry the CSRF token unless `csrf` says otherwise. */
  async call(method: string, path: string, opts: { json?: unknown; csrf?: string | null; headers?: Record<string, string> } = {}) {
    const headers = new Headers(opts.headers);
    if (this.cookie) headers.set('cookie', this.cookie);
    const csrf = opts.csrf === undefined ? this.csrf : opts.csrf;
    if (method !== 'GET' && csrf) headers.set('x-csrf-token', csrf);
    let body: string | undefined;
    if (opts.json !== undefined) {
      headers.set('content-type', 'application/json');
      body = JSON.stringify(opts.json);
    }
    const res = await fetch(`${this.baseUrl}/dashboard/api${path}`, { method, headers, body, redirect: 'manual' });
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
