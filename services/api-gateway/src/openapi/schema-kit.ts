import type { ReferenceObject, SchemaObject, SchemaObjectType } from 'openapi3-ts/oas31';

export type Schema = SchemaObject | ReferenceObject;

export const ref = (name: string): ReferenceObject => ({ $ref: `#/components/schemas/${name}` });

/**
 * A closed object: every response object is rendered field by field by a presenter, and every
 * request body is refused with `unknown_parameter` for a field it does not take, so a field the
 * document does not name is a field the document is wrong about (the contract tests rely on it).
 */
export function closedObject(properties: Record<string, Schema>, required: string[] = Object.keys(properties), extra: SchemaObject = {}): SchemaObject {
  return { type: 'object', additionalProperties: false, required, properties, ...extra };
}

/** The same schema, also allowing null (OpenAPI 3.1 has no `nullable`). */
export function orNull(schema: Schema): Schema {
  if ('$ref' in schema) return { oneOf: [schema, { type: 'null' }] };
  const type = schema.type;
  if (type === undefined) return { oneOf: [schema, { type: 'null' }] };
  const types: SchemaObjectType[] = Array.isArray(type) ? type : [type];
  return { ...schema, type: [...types, 'null'], ...(schema.enum ? { enum: [...schema.enum, null] } : {}) };
}

/** The ids of this API: a prefix and lower-case base-36 characters (`newId`, `derivedId`). */
export const idOf = (prefix: string, description?: string): SchemaObject => ({
  type: 'string',
  pattern: `^${prefix}_[0-9a-z]+$`,
  ...(description ? { description } : {}),
});

export const unixSeconds = (description: string): SchemaObject => ({ type: 'integer', minimum: 0, description: `${description} (Unix seconds).` });

/**
 * An enum with a description of each value. Built from a `Record` over the code's own union type,
 * so that a value added to the type fails to compile until it is documented here.
 */
export function describedEnum<K extends string>(values: Record<K, string>, intro: string, only?: readonly K[]): SchemaObject {
  const keys = (only ?? (Object.keys(values) as K[])).filter((k) => k in values);
  return { type: 'string', enum: keys, description: `${intro}\n\n${keys.map((k) => `- \`${k}\`: ${values[k]}`).join('\n')}` };
}

export const unique = <T>(values: Iterable<T>): T[] => [...new Set(values)];

/** `9360000` → `2 h 36 min`: the retry schedule and timeouts as a reader wants them. */
export function humanDuration(ms: number): string {
  const units: [number, string][] = [
    [3_600_000, 'h'],
    [60_000, 'min'],
    [1_000, 's'],
    [1, 'ms'],
  ];
  const parts: string[] = [];
  let left = ms;
  for (const [size, name] of units) {
    if (left >= size) parts.push(`${Math.floor(left / size)} ${name}`);
    left %= size;
  }
  return parts.join(' ') || '0';
}

/** A file part or a binary body: `contentMediaType` for OpenAPI 3.1 tools, `format: binary` for generators still on 3.0 habits. */
export const binary = (contentMediaType = 'application/octet-stream', description?: string): SchemaObject => ({
  type: 'string',
  format: 'binary',
  contentMediaType,
  ...(description ? { description } : {}),
});
