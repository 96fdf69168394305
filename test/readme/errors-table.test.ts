// The Errors table of docs/api.md is what clients code against, so each row is held to the gateway's
// source: the code must be raised there with the status and type the row states, and every code the
// gateway raises must have a row.
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const ROOT = resolve(__dirname, '../..');

interface Raised {
  status: number;
  type: string;
  code: string;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

/** Every error the gateway raises, read from its source (constructors and the ApiError helpers). */
function raisedByGateway(): Raised[] {
  // The gateway's own, and what it mounts from libraries: @media/common's error helpers and JSON
  // body parser, and how @media/callbacks answers a refused change of a webhook endpoint.
  const files = [
    ...sourceFiles(join(ROOT, 'services/api-gateway/src')),
    join(ROOT, 'libs/common/src/api-error.ts'),
    join(ROOT, 'libs/common/src/json-body.ts'),
    join(ROOT, 'libs/callbacks/src/webhook-endpoints.ts'),
  ];
  const text = files
    .map((f) => readFileSync(f, 'utf8'))
    .join('\n')
    .replace(/\s+/g, ' ');
  const raised: Raised[] = [];
  // The message: a string or template literal (it may hold commas and semicolons), or a name. A call
  // laid out one argument per line ends with a trailing comma.
  const message = "(?:'(?:[^'\\\\]|\\\\.)*'|`[^`]*`|[\\w.]+)";
  const call = (head: string) => new RegExp(`${head} ?${message}, ?[^,]+?, ?'(\\w+)',? ?\\)`, 'g');
  for (const m of text.matchAll(call("new ApiError\\( ?(\\d{3}), ?'(\\w+)',"))) raised.push({ status: Number(m[1]), type: m[2], code: m[3] });
  for (const m of text.matchAll(call('ApiError\\.invalid\\('))) raised.push({ status: 400, type: 'invalid_request_error', code: m[1] });
  for (const m of text.matchAll(new RegExp(`ApiError\\.rateLimited\\( ?${message}, ?'(\\w+)'`, 'g')))
    raised.push({ status: 429, type: 'rate_limit_error', code: m[1] });
  if (/ApiError\.notFound\(/.test(text)) raised.push({ status: 404, type: 'not_found_error', code: 'not_found' });
  if (/ApiError\.unavailable\(\)/.test(text)) raised.push({ status: 503, type: 'api_error', code: 'service_unavailable' });
  // A synchronous image call answers its job's failure with the status of this map.
  const syncFailures = /SYNC_FAILURE_STATUS = new Map<string, number>\(\[(.*?)\]\)/.exec(text)?.[1] ?? '';
  for (const m of syncFailures.matchAll(/\['(\w+)', (\d{3})\]/g)) {
    const status = Number(m[2]);
    raised.push({ status, type: status === 400 ? 'invalid_request_error' : 'api_error', code: m[1] });
  }
  return raised;
}

function readmeRows(): Raised[] {
  const readme = readFileSync(join(ROOT, 'docs', 'api.md'), 'utf8');
  const section = /^## Errors\n[\s\S]*?(?=^## |$(?![\s\S]))/m.exec(readme)?.[0] ?? '';
  return [...section.matchAll(/^\| (\d{3}) \| `(\w+)` \| `(\w+)` \|/gm)].map((m) => ({ status: Number(m[1]), type: m[2], code: m[3] }));
}

describe('docs/api.md Errors table', () => {
  const raised = raisedByGateway();
  const rows = readmeRows();

  it('is read, and the source is read', () => {
    expect(rows.length).toBeGreaterThan(30);
    expect(raised.length).toBeGreaterThan(30);
  });

  it.each(rows.map((r) => [`${r.status} ${r.code}`, r] as const))('%s: the gateway raises it with that status and type', (_, row) => {
    expect(raised.filter((r) => r.code === row.code).map((r) => `${r.status} ${r.type}`)).toContain(`${row.status} ${row.type}`);
  });

  it('has a row for every code the gateway raises', () => {
    const documented = new Set(rows.map((r) => `${r.status} ${r.code}`));
    const missing = raised.filter((r) => !documented.has(`${r.status} ${r.code}`)).map((r) => `${r.status} ${r.code}`);
    expect([...new Set(missing)]).toEqual([]);
  });
});
