// The README test is only as strict as its comparison: these cases show what it lets vary (ids,
// times, signatures, what `…` leaves out) and what it does not (statuses, values, keys, ids that
// change between examples).
import { examples, fencedBlocks, isRepeatable } from './support/examples';
import { Bindings, matchOutput } from './support/outputs';

const ID_A = 'req_aaaaaaaaaaaaaaaaaaaaaaaa';
const ID_B = 'req_bbbbbbbbbbbbbbbbbbbbbbbb';
const RUN_A = 'req_000000000000000000000001';
const RUN_B = 'req_000000000000000000000002';

describe('matchOutput', () => {
  it('binds ids on first sight and lets times and link signatures differ', () => {
    const bindings = new Bindings();
    const shown = `{"id":"${ID_A}","created_at":1795488969,"cost":0.01,"url":"http://h/v1/files/${ID_A}/0.png?expires=1795575369&signature=GsXp0EzrvHF5XiN5pnfX0pILtn2VkFGkIMYxTR6annk"}`;
    const printed = `{"id":"${RUN_A}","created_at":1800000000,"cost":0.01,"url":"http://h/v1/files/${RUN_A}/0.png?expires=1800086400&signature=XXXX0EzrvHF5XiN5pnfX0pILtn2VkFGkIMYxTR6annk"}`;
    expect(matchOutput(shown, printed, bindings)).toEqual([]);
    expect(bindings.apply(`curl $BASE/v1/images/${ID_A}`)).toBe(`curl $BASE/v1/images/${RUN_A}`);
    // The whole link too, so that a command can download what an output showed.
    expect(bindings.apply(`curl '${JSON.parse(shown).url}'`)).toBe(`curl '${JSON.parse(printed).url}'`);
  });

  it('takes null for an attempt’s connection steps (a pooled connection has none), and for no other number', () => {
    const shown = '{"timing":{"dns_ms":0,"connect_ms":2,"tls_ms":1,"first_byte_ms":2}}';
    expect(matchOutput(shown, '{"timing":{"dns_ms":null,"connect_ms":null,"tls_ms":null,"first_byte_ms":6}}', new Bindings())).toEqual([]);
    expect(matchOutput(shown, '{"timing":{"dns_ms":0,"connect_ms":2,"tls_ms":1,"first_byte_ms":null}}', new Bindings())).toHaveLength(1);
    expect(matchOutput('{"duration_ms":15}', '{"duration_ms":null}', new Bindings())).toHaveLength(1);
  });

  it('refuses another value, a missing or an extra key, and another status', () => {
    expect(matchOutput('{"cost":0.01}', '{"cost":0.02}', new Bindings())).toHaveLength(1);
    expect(matchOutput('{"status":"completed"}', '{"status":"failed"}', new Bindings())).toHaveLength(1);
    expect(matchOutput('{"a":1,"b":2}', '{"a":1}', new Bindings())).toHaveLength(1);
    expect(matchOutput('{"a":1}', '{"a":1,"b":2}', new Bindings())).toHaveLength(1);
    expect(matchOutput('HTTP/1.1 202 Accepted\n\n{"a":1}', 'HTTP/1.1 200 OK\nx: y\n\n{"a":1}', new Bindings())).toHaveLength(1);
    expect(matchOutput('HTTP/1.1 200 OK\nidempotent-replayed: true', 'HTTP/1.1 200 OK\nx-request-id: r', new Bindings())).toHaveLength(1);
    expect(matchOutput('{"status":"ok"}', 'curl: (7) Failed to connect', new Bindings())).toHaveLength(1);
  });

  it('refuses an id that is not the one an earlier output bound, and two README ids for one', () => {
    const bindings = new Bindings();
    expect(matchOutput(`{"id":"${ID_A}"}`, `{"id":"${RUN_A}"}`, bindings)).toEqual([]);
    expect(matchOutput(`{"job_id":"${ID_A}"}`, `{"job_id":"${RUN_B}"}`, bindings)).toHaveLength(1);
    expect(matchOutput(`{"job_id":"${ID_B}"}`, `{"job_id":"${RUN_A}"}`, bindings)).toHaveLength(1);
    expect(() => bindings.apply(`curl $BASE/v1/images/${ID_B}`)).toThrow('no earlier output showed');
  });

  it('takes "…" as what is left out, and nothing more', () => {
    const bindings = new Bindings();
    expect(matchOutput('{"object":"list","data":[{"id":"x","…":"…"},"…"]}', '{"object":"list","data":[{"id":"x","n":1},{"id":"y"}]}', bindings)).toEqual([]);
    expect(matchOutput('{"data":[{"id":"x","…":"…"},"…"]}', '{"data":[]}', bindings)).toHaveLength(1);
    expect(matchOutput('{"api_key":"sk_…"}', '{"api_key":"sk_abc"}', bindings)).toEqual([]);
    expect(matchOutput('{"api_key":"sk_…"}', '{"api_key":"pk_abc"}', bindings)).toHaveLength(1);
  });

  it('holds text lines in order, and every response of a transcript', () => {
    expect(matchOutput('first\nsecond', 'noise\nfirst\nmore\nsecond', new Bindings())).toEqual([]);
    expect(matchOutput('second\nfirst', 'first\nsecond', new Bindings())).toHaveLength(1);
    const two = 'HTTP/1.1 200 OK\nx-ratelimit-remaining-requests: 1\n\nHTTP/1.1 429 Too Many Requests\nx-ratelimit-remaining-requests: 0\n';
    expect(matchOutput(two, two.replace('remaining-requests: 1', 'remaining-requests: 0'), new Bindings())).toHaveLength(1);
    expect(matchOutput(two, 'HTTP/1.1 200 OK\nx-ratelimit-remaining-requests: 1\n', new Bindings())).toHaveLength(1);
  });
});

describe('README examples', () => {
  const text = [
    '## Section',
    '```sh',
    'curl -s $BASE/healthz',
    '```',
    'prose',
    '```json',
    '{"status":"ok"}',
    '```',
    '<!-- readme-test: skip: starts a server -->',
    '```sh',
    'node server.js',
    '```',
    '```ts',
    'code();',
    '```',
    '```sh',
    "curl -s -X POST $BASE/v1/x -d '{}'",
    '```',
  ].join('\n');

  it('pairs each sh block with the output block after it, and reads the markers', () => {
    const found = examples(fencedBlocks(text));
    expect(found.map((e) => [e.command.body, e.marker.kind, e.expected?.body])).toEqual([
      ['curl -s $BASE/healthz', 'run', '{"status":"ok"}'],
      ['node server.js', 'skip', undefined],
      ["curl -s -X POST $BASE/v1/x -d '{}'", 'run', undefined],
    ]);
    expect(found[1].marker).toEqual({ kind: 'skip', reason: 'starts a server' });
  });

  it('repeats only commands that change nothing', () => {
    expect(isRepeatable('curl -s $BASE/v1/images/req_x -H "Authorization: Bearer $API_KEY"')).toBe(true);
    expect(isRepeatable("curl -s $BASE/v1/videos -d '{}'")).toBe(false);
    expect(isRepeatable('curl -s $BASE/v1/videos -F model=motion-1')).toBe(false);
    expect(isRepeatable('curl -si -X POST $BASE/v1/callbacks/msg_x/retry')).toBe(false);
    expect(isRepeatable('npm run -s admin -- ledger --workspace ws_x')).toBe(false);
  });
});
