import Joi from 'joi';

/**
 * The processes that read settings: the three services, the admin CLI (`npm run admin`) and the
 * launcher of the local stack (`npm start`, tools/admin/src/local-stack.ts). A setting names each
 * one whose behaviour it changes; the settings table says `all` for all five.
 */
export const READERS = ['gateway', 'generator', 'dispatcher', 'admin', 'npm start'] as const;
export type Reader = (typeof READERS)[number];

/** What docs/configuration.md says of a setting besides its name and default. */
export interface SettingDoc {
  /** Markdown for the settings table; links are relative to docs/. */
  readonly description: string;
  readonly readBy: readonly Reader[];
  /** Said in parentheses after the default: its size in words, or what differs in production. */
  readonly note?: string;
  /** Said instead of the default: for a setting whose unset state stands for a value chosen elsewhere (LOG_FORMAT). */
  readonly shown?: string;
}

/**
 * The `AppConfig` field a setting fills by itself, keyed by the field's name: `true` puts the
 * setting's typed value there as it is, a function puts what it makes of it (`(s) => s * 1_000`).
 * The field's type is that value's, and its declaration is this entry: an editor's go-to-definition
 * on `config.keyPrefix` lands in `KEY_PREFIX`'s declaration, beside its description, and a JSDoc on
 * the entry is the field's hover text. A setting that only composite fields read (config.ts) has none.
 */
export type Fills<T> = Readonly<Record<string, true | ((value: T) => unknown)>>;

/** What the option object of every builder takes besides its kind's own options. */
interface Declared<T, F extends Fills<T>> extends SettingDoc {
  fills?: F & Fills<T>;
}

/** The fills of a setting that declares none. */
type NoFields = Record<never, never>;

/**
 * One environment variable: how its text is checked, its default, the typed value it becomes, the
 * `AppConfig` field it fills (`F`, as {@link Fills} declares it) and what the docs say of it. Made
 * by the builders below, whose options say each of these once.
 */
export interface Setting<T, F extends object = object> extends SettingDoc {
  /** Checks the variable's text and supplies its default. Rules between settings are config.ts's. */
  readonly schema: Joi.AnySchema;
  /** The default as the variable would be spelt; undefined when there is none. */
  readonly default: string | undefined;
  /** The typed value of what the schema accepted (its default included; undefined when unset without one). */
  readonly read: (accepted: unknown) => T;
  /** The `AppConfig` field it fills by itself; empty when it fills none. */
  readonly fills: F;
}

/** The value type of a setting. */
export type ValueOf<S> = S extends Setting<infer T> ? T : never;

/**
 * The `AppConfig` fields a setting fills, each of the type of the value it puts there. Mapped over
 * the `fills` entries themselves, so that each field keeps its entry as its declaration.
 */
export type FieldsOf<S> = S extends Setting<infer T, infer F> ? { -readonly [P in keyof F]: F[P] extends (value: never) => infer V ? V : T } : never;

/** The fields `s` fills and their values, from its typed value. */
export function fieldEntries<T>(s: Setting<T>, value: T): [field: string, value: unknown][] {
  // Every builder's `fills` is a Fills<T> (Declared says so); Setting leaves F open so that `Setting<T>` is any setting of T.
  return Object.entries(s.fills as Fills<T>).map(([field, make]) => [field, make === true ? value : make(value)]);
}

function setting<T, F extends Fills<T>>(
  schema: Joi.AnySchema,
  fallback: string | undefined,
  read: (accepted: unknown) => T,
  doc: Declared<T, F>,
): Setting<T, F> {
  // A setting declared without fills has F = NoFields, which `{}` is.
  const fills = doc.fills ?? ({} as F);
  return { schema, default: fallback, read, fills, description: doc.description, readBy: doc.readBy, note: doc.note, shown: doc.shown };
}

/** `a, b,,c` → `['a', 'b', 'c']`: every list setting is comma-separated, blanks around entries ignored. */
export const splitList = (text: string): string[] =>
  text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);

export interface HostPort {
  host: string;
  port: number;
}

/** `host:port`, `[v6]:port`; undefined when it is neither. */
export function parseNode(text: string): HostPort | undefined {
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9.-]+)):(\d{1,5})$/.exec(text);
  if (!match) return undefined;
  const port = Number(match[3]);
  if (port < 1 || port > 65_535) return undefined;
  return { host: match[1] ?? match[2]!, port };
}

/** An integer from `min` (and up to `max`). */
export function int<F extends Fills<number> = NoFields>(options: { min: number; max?: number; default: number } & Declared<number, F>): Setting<number, F> {
  const bounded = Joi.number().integer().min(options.min);
  const schema = options.max === undefined ? bounded : bounded.max(options.max);
  return setting(schema.default(options.default), String(options.default), (v) => v as number, options);
}

/** A TCP port, 0 included (any free port). */
export function port<F extends Fills<number> = NoFields>(options: { default: number } & Declared<number, F>): Setting<number, F> {
  return setting(Joi.number().port().default(options.default), String(options.default), (v) => v as number, options);
}

/** `true`/`false`, also `1`/`0`. */
export function bool<F extends Fills<boolean> = NoFields>(options: { default: boolean } & Declared<boolean, F>): Setting<boolean, F> {
  return setting(Joi.boolean().truthy('1').falsy('0').default(options.default), String(options.default), (v) => v as boolean, options);
}

interface TextOptions {
  /** Joi's rules for the text (`s.uri(…)`, `s.pattern(…)`), with the messages they should give. */
  check?: (text: Joi.StringSchema) => Joi.StringSchema;
  default?: string;
}

/** Free text, narrowed by `check`; without a default, undefined when unset. */
export function str<F extends Fills<string> = NoFields>(options: TextOptions & { default: string } & Declared<string, F>): Setting<string, F>;
export function str<F extends Fills<string | undefined> = NoFields>(
  options: TextOptions & { default?: undefined } & Declared<string | undefined, F>,
): Setting<string | undefined, F>;
export function str(options: TextOptions & Declared<string | undefined, Fills<string | undefined>>): Setting<string | undefined, Fills<string | undefined>> {
  const checked = options.check ? options.check(Joi.string()) : Joi.string();
  const schema = options.default === undefined ? checked : checked.default(options.default);
  return setting(schema, options.default, (v) => v as string | undefined, options);
}

/** One of a few words; without a default, undefined when unset. */
export function oneOf<const V extends string, F extends Fills<V> = NoFields>(
  values: readonly V[],
  options: { default: NoInfer<V> } & Declared<V, F>,
): Setting<V, F>;
export function oneOf<const V extends string, F extends Fills<V | undefined> = NoFields>(
  values: readonly V[],
  options: Declared<V | undefined, F>,
): Setting<V | undefined, F>;
export function oneOf<const V extends string>(
  values: readonly V[],
  options: { default?: V } & Declared<V | undefined, Fills<V | undefined>>,
): Setting<V | undefined, Fills<V | undefined>> {
  const valid = Joi.string().valid(...values);
  const schema = options.default === undefined ? valid : valid.default(options.default);
  return setting(schema, options.default, (v) => v as V | undefined, options);
}

interface ListOptions {
  /** Whether one entry is well formed; a type guard makes the entries of that type. */
  entry?: (entry: string) => boolean;
  /** What the malformed entries are, after the setting's name (`has entries that are not host:port`). */
  problem?: string;
  /** The entries are secrets: the message names none of them. */
  secret?: boolean;
}

/** A comma-separated list, empty by default. */
export function list<E extends string, F extends Fills<E[]> = NoFields>(
  options: ListOptions & { entry: (entry: string) => entry is E } & Declared<E[], F>,
): Setting<E[], F>;
export function list<F extends Fills<string[]> = NoFields>(options: ListOptions & Declared<string[], F>): Setting<string[], F>;
export function list(options: ListOptions & Declared<string[], Fills<string[]>>): Setting<string[], Fills<string[]>> {
  const { entry, problem, secret } = options;
  const checked = entry
    ? Joi.string().custom((value: string, helpers) => {
        const bad = splitList(value).filter((e) => !entry(e));
        if (bad.length === 0) return value;
        return helpers.message({ custom: secret ? `{{#label}} ${problem}` : `{{#label}} ${problem}: ${bad.join(', ')}` });
      })
    : Joi.string();
  return setting(checked.allow('').default(''), '', (v) => splitList(v as string), options);
}

/** `host:port` seeds, comma-separated, at least one; undefined when unset. */
export function nodes<F extends Fills<HostPort[] | undefined> = NoFields>(options: Declared<HostPort[] | undefined, F>): Setting<HostPort[] | undefined, F> {
  const schema = Joi.string().custom((value: string, helpers) => {
    const bad = splitList(value).filter((node) => parseNode(node) === undefined);
    if (splitList(value).length === 0) return helpers.message({ custom: '{{#label}} must list host:port seeds, comma-separated' });
    return bad.length === 0 ? value : helpers.message({ custom: `{{#label}} has entries that are not host:port: ${bad.join(', ')}` });
  });
  return setting(schema, undefined, (v) => (v === undefined ? undefined : splitList(v as string).map((node) => parseNode(node)!)), options);
}

/** Why `parse` refused a text; said after the setting's name. */
export class Refusal {
  constructor(readonly reason: string) {}
}

/** Text with a grammar of its own, which `parse` turns into the value or refuses. */
export function parsed<T, F extends Fills<T> = NoFields>(options: { parse: (text: string) => T | Refusal; default: string } & Declared<T, F>): Setting<T, F> {
  const { parse } = options;
  const checked = Joi.string().custom((value: string, helpers) => {
    const result = parse(value);
    return result instanceof Refusal ? helpers.message({ custom: `{{#label}} ${result.reason}` }) : value;
  });
  const schema = (options.default === '' ? checked.allow('') : checked).default(options.default);
  const read = (accepted: unknown): T => {
    const result = parse(accepted as string);
    // The schema let only parsable text through, and a default that does not parse is a bug here.
    if (result instanceof Refusal) throw new Error(`setting default does not parse: ${result.reason}`);
    return result;
  };
  return setting(schema, options.default, read, options);
}

/** The header of the settings table in docs/configuration.md. */
export const TABLE_HEADER = ['| Variable | Default | Meaning | Used by |', '| --- | --- | --- | --- |'];

/** The setting's row of the settings table. */
export function tableRow(name: string, s: Setting<unknown>): string {
  const base = s.shown ?? (s.default === undefined ? 'unset' : s.default === '' ? 'empty' : `\`${s.default}\``);
  const fallback = s.note ? `${base} (${s.note})` : base;
  const readers = READERS.every((r) => s.readBy.includes(r))
    ? 'all'
    : READERS.filter((r) => s.readBy.includes(r))
        .map((r) => (r === 'npm start' ? '`npm start`' : r))
        .join(', ');
  const cell = (text: string) => text.replaceAll('|', '\\|');
  return `| \`${name}\` | ${cell(fallback)} | ${cell(s.description)} | ${readers} |`;
}
