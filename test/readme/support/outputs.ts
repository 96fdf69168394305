/**
 * Holds what a command printed to what the README shows for it. Ids, times, signatures and
 * measured durations differ from run to run; everything else must be as shown: statuses, keys,
 * states, costs, counts, messages. Ids are bound on first sight (README id → this run's id) and
 * must then stay the same everywhere, which is also how later commands that name an id get this
 * run's one.
 */

/** Ids of the service's objects, as the README spells them (24 characters after the prefix, 25 for those that name their store shard): a printed id must have the length shown. */
const ID = /\b(?:req|video|ws|msg|rcv|we)_[0-9a-z]{24,25}\b/;
const ISO_TIME = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z/;
const SIGNATURE_PARAM = /signature=[A-Za-z0-9_-]{43}/;
const EXPIRES_PARAM = /expires=\d+/;
/** A Unix time in seconds or milliseconds inside a string (`webhook-timestamp`, request ids). */
const LONG_NUMBER = /\d{10,}/;
const ELLIPSIS = '…';
const WHOLE_ID = new RegExp(`^${ID.source}$`);
const WHOLE_ISO_TIME = new RegExp(`^${ISO_TIME.source}$`);

/** Number fields that are times or measurements: any number will do where the README shows one. */
const VARYING_NUMBER_KEY = /(_at|_ms)$|^(created|since|until)$/;
/**
 * An attempt's connection steps: null when the attempt went over a pooled connection (no lookup,
 * connection or handshake was made; docs/callbacks.md), which depends on what ran just before.
 */
const STEP_TIMING_KEYS = new Set(['dns_ms', 'connect_ms', 'tls_ms']);
/** String fields whose value is measured or secret, shown only by its presence. */
const VARYING_STRING_KEYS = new Set(['content-length', 'date', 'etag', 'password', 'keep-alive']);
/** Response headers whose value depends on the moment (or the bytes) of the run. */
const VARYING_HEADERS = new Set(['content-length', 'date', 'etag', 'keep-alive', 'x-ratelimit-reset-requests', 'retry-after']);

/** README ids and links → this run's, filled in as outputs are matched. */
export class Bindings {
  constructor(
    readonly ids = new Map<string, string>(),
    /** Whole signed links, so that a command can download one that an output showed. */
    readonly links = new Map<string, string>(),
  ) {}

  clone(): Bindings {
    return new Bindings(new Map(this.ids), new Map(this.links));
  }

  adopt(other: Bindings): void {
    for (const [k, v] of other.ids) this.ids.set(k, v);
    for (const [k, v] of other.links) this.links.set(k, v);
  }

  /** False when the README id is bound to another id, or another README id holds this one. */
  bind(readmeId: string, actual: string): boolean {
    const bound = this.ids.get(readmeId);
    if (bound !== undefined) return bound === actual;
    for (const [other, value] of this.ids) if (value === actual && other !== readmeId) return false;
    this.ids.set(readmeId, actual);
    return true;
  }

  /** The command with this run's links and ids; throws on an id no earlier output showed. */
  apply(command: string): string {
    // Links first, held aside (as private-use characters, which no command contains) while ids are
    // swapped: their ids are already this run's.
    const links = [...this.links].sort((a, b) => b[0].length - a[0].length);
    let text = command;
    links.forEach(([readme], i) => (text = text.split(readme).join(`\uE000${i}\uE000`)));
    text = text.replace(new RegExp(ID.source, 'g'), (id) => {
      const actual = this.ids.get(id);
      if (actual === undefined) throw new Error(`the command names ${id}, which no earlier output showed`);
      return actual;
    });
    return text.replace(/\uE000(\d+)\uE000/g, (_, i: string) => links[Number(i)][1]);
  }
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Matches one string the README shows against one printed: `…` stands for anything, ids bind, and
 * times, link expiries and link signatures may differ.
 */
export function matchString(expected: string, actual: string, bindings: Bindings): boolean {
  const token = new RegExp(
    [ID, ISO_TIME, SIGNATURE_PARAM, EXPIRES_PARAM, LONG_NUMBER]
      .map((r) => r.source)
      .concat(escape(ELLIPSIS))
      .join('|'),
    'g',
  );
  const unbound: string[] = [];
  let pattern = '';
  let last = 0;
  for (const match of expected.matchAll(token)) {
    pattern += escape(expected.slice(last, match.index));
    const text = match[0];
    if (text === ELLIPSIS) pattern += '[\\s\\S]*?';
    else if (WHOLE_ID.test(text)) {
      const bound = bindings.ids.get(text);
      if (bound !== undefined) pattern += escape(bound);
      else {
        // The shape the README shows: an id of 25 characters after its prefix is not one of 24.
        const prefix = text.slice(0, text.indexOf('_'));
        pattern += `(${prefix}_[0-9a-z]{${text.length - prefix.length - 1}})`;
        unbound.push(text);
      }
    } else if (WHOLE_ISO_TIME.test(text)) pattern += ISO_TIME.source;
    else if (text.startsWith('signature=')) pattern += SIGNATURE_PARAM.source;
    else if (text.startsWith('expires=')) pattern += EXPIRES_PARAM.source;
    // As many digits as shown: a time in seconds is not one in milliseconds, nor a request id's 25 digits 13.
    else pattern += `\\d{${text.length}}`;
    last = match.index + text.length;
  }
  pattern += escape(expected.slice(last));
  const found = new RegExp(`^${pattern}$`).exec(actual);
  if (!found) return false;
  for (const [i, readmeId] of unbound.entries()) if (!bindings.bind(readmeId, found[i + 1])) return false;
  if (/[?&]signature=/.test(expected) && !expected.includes(ELLIPSIS)) bindings.links.set(expected, actual);
  return true;
}

/** Differences between a JSON value the README shows and one printed; empty when they match. */
export function matchJson(expected: unknown, actual: unknown, bindings: Bindings, path = '$', key = ''): string[] {
  const differ = (what: string) => [`${path}: ${what} (README ${JSON.stringify(expected)}, got ${JSON.stringify(actual)})`];
  if (expected === null || typeof expected === 'boolean') return expected === actual ? [] : differ('not the same');
  if (typeof expected === 'number') {
    if (actual === null && STEP_TIMING_KEYS.has(key)) return [];
    if (typeof actual !== 'number') return differ('not a number');
    return VARYING_NUMBER_KEY.test(key) || expected === actual ? [] : differ('another number');
  }
  if (typeof expected === 'string') {
    if (typeof actual !== 'string') return differ('not a string');
    if (VARYING_STRING_KEYS.has(key)) return [];
    return matchString(expected, actual, bindings) ? [] : differ('another string');
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return differ('not an array');
    // A last item "…" abridges the list: the items shown come first, more may follow.
    const abridged = expected.at(-1) === ELLIPSIS;
    const shown = abridged ? expected.slice(0, -1) : expected;
    if (abridged ? actual.length < shown.length : actual.length !== shown.length) return differ(`${actual.length} items`);
    return shown.flatMap((item, i) => matchJson(item, actual[i], bindings, `${path}[${i}]`, key));
  }
  if (typeof expected === 'object') {
    if (typeof actual !== 'object' || actual === null || Array.isArray(actual)) return differ('not an object');
    const shown = expected as Record<string, unknown>;
    const got = actual as Record<string, unknown>;
    // A key "…" abridges the object: the keys shown must be there, others may be too.
    const abridged = ELLIPSIS in shown;
    const keys = Object.keys(shown).filter((k) => k !== ELLIPSIS);
    const problems: string[] = [];
    const missing = keys.filter((k) => !(k in got));
    const extra = abridged ? [] : Object.keys(got).filter((k) => !(k in shown));
    if (missing.length > 0 || extra.length > 0)
      problems.push(`${path}: keys differ (missing ${missing.join(', ') || '-'}; not shown ${extra.join(', ') || '-'})`);
    for (const k of keys) if (k in got) problems.push(...matchJson(shown[k], got[k], bindings, `${path}.${k}`, k));
    return problems;
  }
  return differ('unexpected README value');
}

/** Consecutive JSON values (`{…}{…}`, or one per line); undefined when the text is not only JSON. */
export function jsonValues(text: string): unknown[] | undefined {
  const values: unknown[] = [];
  let i = 0;
  while (i < text.length) {
    while (i < text.length && /\s/.test(text[i])) i++;
    if (i >= text.length) break;
    if (text[i] !== '{' && text[i] !== '[') return undefined;
    let depth = 0;
    let inString = false;
    let j = i;
    for (; j < text.length; j++) {
      const c = text[j];
      if (inString) {
        if (c === '\\') j++;
        else if (c === '"') inString = false;
      } else if (c === '"') inString = true;
      else if (c === '{' || c === '[') depth++;
      else if (c === '}' || c === ']') {
        depth--;
        if (depth === 0) break;
      }
    }
    try {
      values.push(JSON.parse(text.slice(i, j + 1)));
    } catch {
      return undefined;
    }
    i = j + 1;
  }
  return values.length > 0 ? values : undefined;
}

export interface HttpResponse {
  statusLine: string;
  headers: [string, string][];
  body: string;
}

/** Responses as `curl -i` (or `-D -`) prints them, one after another. */
export function httpResponses(text: string): HttpResponse[] {
  const responses: HttpResponse[] = [];
  let inBody = false;
  let body: string[] = [];
  const finish = () => {
    if (responses.length > 0) responses[responses.length - 1].body = body.join('\n').trim();
    body = [];
  };
  for (const raw of text.split('\n')) {
    const line = raw.replace(/\r$/, '');
    if (/^HTTP\/[\d.]+ \d{3}/.test(line)) {
      finish();
      responses.push({ statusLine: line.trim(), headers: [], body: '' });
      inBody = false;
      continue;
    }
    if (responses.length === 0) continue;
    const header = /^([A-Za-z0-9-]+):\s?(.*)$/.exec(line);
    if (!inBody && header) responses[responses.length - 1].headers.push([header[1].toLowerCase(), header[2].trim()]);
    else {
      inBody = true;
      body.push(line);
    }
  }
  finish();
  return responses;
}

/** Text lines: each line shown must be printed, in this order (other lines may come between). */
export function matchLines(expected: string, actual: string, bindings: Bindings): string[] {
  const printed = actual.split('\n').map((l) => l.replace(/\s+$/, ''));
  let at = 0;
  for (const line of expected
    .split('\n')
    .map((l) => l.replace(/\s+$/, ''))
    .filter((l) => l !== '')) {
    const found = printed.findIndex((p, i) => i >= at && matchString(line, p, bindings));
    if (found < 0) return [`line not printed (in this order): ${line}`];
    at = found + 1;
  }
  return [];
}

/** Differences between an output block of the README and what its command printed. */
export function matchOutput(expectedBlock: string, printed: string, bindings: Bindings): string[] {
  if (/^\s*HTTP\//.test(expectedBlock)) {
    const expected = httpResponses(expectedBlock);
    const actual = httpResponses(printed);
    if (actual.length !== expected.length) return [`${actual.length} HTTP responses printed, the README shows ${expected.length}`];
    return expected.flatMap((want, n) => {
      const got = actual[n];
      const problems: string[] = [];
      if (got.statusLine !== want.statusLine) problems.push(`response ${n + 1}: ${got.statusLine}, the README shows ${want.statusLine}`);
      for (const [name, value] of want.headers) {
        const values = got.headers.filter(([h]) => h === name).map(([, v]) => v);
        if (values.length === 0) problems.push(`response ${n + 1}: no ${name} header`);
        else if (!VARYING_HEADERS.has(name) && !values.some((v) => matchString(value, v, bindings))) {
          problems.push(`response ${n + 1}: ${name}: ${values.join(', ')}, the README shows ${value}`);
        }
      }
      if (want.body !== '') problems.push(...matchOutput(want.body, got.body, bindings).map((p) => `response ${n + 1} body: ${p}`));
      return problems;
    });
  }
  const expectedJson = jsonValues(expectedBlock);
  if (expectedJson) {
    const actualJson = jsonValues(printed);
    if (!actualJson) return [`printed text that is not JSON: ${printed.slice(0, 300)}`];
    if (actualJson.length !== expectedJson.length) return [`${actualJson.length} JSON values printed, the README shows ${expectedJson.length}`];
    return expectedJson.flatMap((value, i) => matchJson(value, actualJson[i], bindings, expectedJson.length > 1 ? `$${i + 1}` : '$'));
  }
  return matchLines(expectedBlock, printed, bindings);
}
