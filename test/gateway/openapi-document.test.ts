import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type Joi from 'joi';
import type { OperationObject, ParameterObject, ReferenceObject, SchemaObject } from 'openapi3-ts/oas31';
import { Redis } from 'ioredis';
import { createLogger, loadConfig } from '@media/common';
import { buildOpenApiDocument } from '../../services/api-gateway/src/openapi/document';
import { REQUEST_RULES } from '../../services/api-gateway/src/validation';
import { createGateway } from '../../services/api-gateway/src/wiring';
import { expressRoutes, OpenApiContract } from '../support/openapi';
import { deleteKeysUnder, REDIS_URL } from '../support/stack';

/** The document itself, without a running gateway: valid OpenAPI 3.1, schemas that compile, request schemas that say what validation does. */
const doc = buildOpenApiDocument(loadConfig({}));
const contract = new OpenApiContract(doc);

const VALIDATOR_CLI = resolve(__dirname, '../../node_modules/@seriousme/openapi-schema-validator/bin/validate-api-cli.js');

/** The validator is an ES module that Jest's CommonJS runtime cannot load, so its own command line runs it. */
function validateOpenApi(document: object): { valid: boolean; errors?: unknown } {
  const dir = mkdtempSync(join(tmpdir(), 'openapi-'));
  try {
    const file = join(dir, 'openapi.json');
    writeFileSync(file, JSON.stringify(document));
    const run = spawnSync(process.execPath, [VALIDATOR_CLI, file], { encoding: 'utf8' });
    return JSON.parse(run.stdout) as { valid: boolean; errors?: unknown };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('the OpenAPI document', () => {
  it('validates as OpenAPI 3.1', () => {
    expect(doc.openapi).toMatch(/^3\.1\./);
    expect(validateOpenApi(doc)).toEqual({ valid: true });
  });

  it('is refused by the same validator when broken, so the check above can fail', () => {
    const broken = structuredClone(doc) as unknown as Record<string, Record<string, unknown>>;
    delete (broken.info as { title?: string }).title;
    (broken.paths['/healthz'] as Record<string, unknown>).get = { responses: { 200: { content: {} } } };
    expect(validateOpenApi(broken).valid).toBe(false);
  });

  it('has schemas that compile under strict Ajv (JSON Schema 2020-12): no unknown keyword, no dangling $ref', () => {
    for (const name of Object.keys(doc.components?.schemas ?? {})) expect(() => contract.validator(['components', 'schemas', name])).not.toThrow();
    for (const name of Object.keys(doc.components?.responses ?? {})) {
      expect(() => contract.validator(['components', 'responses', name, 'content', 'application/json', 'schema'])).not.toThrow();
    }
    for (const [path, item] of Object.entries(doc.paths ?? {})) {
      for (const [method, op] of Object.entries(item as Record<string, OperationObject>)) {
        for (const [type, media] of Object.entries((op.requestBody as { content?: object } | undefined)?.content ?? {})) {
          if (media) expect(() => contract.validator(['paths', path, method, 'requestBody', 'content', type, 'schema'])).not.toThrow();
        }
        for (const [status, response] of Object.entries(op.responses ?? {})) {
          for (const type of Object.keys((response as { content?: object }).content ?? {})) {
            expect(() => contract.validator(['paths', path, method, 'responses', status, 'content', type, 'schema'])).not.toThrow();
          }
        }
      }
    }
  });

  it('documents every webhook event with a body schema that refuses an event of another type', () => {
    expect(Object.keys(doc.webhooks ?? {}).sort()).toEqual(['image.completed', 'image.failed', 'video.completed', 'video.failed']);
    const body = (type: string) => ['webhooks', type, 'post', 'requestBody', 'content', 'application/json', 'schema'];
    const completed = contract.validator(body('image.completed'));
    expect(completed({ type: 'image.failed', timestamp: '2026-01-01T00:00:00.000Z', data: {} })).toBe(false);
  });
});

describe('routes', () => {
  // The dashboard is the browser app's own API (session cookie and CSRF token, its contract in
  // libs/dashboard/src/contract.ts), not part of the public API this document describes.
  const isPublic = (route: string) => !route.split(' ')[1].startsWith('/dashboard');

  it('documents every route of the real app, and every documented operation is a route', async () => {
    const prefix = `test-${randomBytes(6).toString('hex')}`;
    const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    const gateway = await createGateway(loadConfig({ KEY_PREFIX: prefix, REDIS_URL }), redis, createLogger('test', 'error'));
    try {
      const routes = expressRoutes(gateway.app);
      expect(routes).toContain('GET /v1/files/{key}');
      expect(routes.filter((r) => !isPublic(r)).length).toBeGreaterThan(0);
      const documented = contract.operations();
      expect(routes.filter(isPublic).filter((route) => !documented.includes(route))).toEqual([]);
      expect(documented.filter((op) => !routes.includes(op))).toEqual([]);
    } finally {
      await gateway.close();
      await deleteKeysUnder(redis, prefix);
      redis.disconnect();
    }
  });
});

/** What a field's rules say, in one vocabulary for Joi's description and for a JSON Schema. */
interface Facts {
  type: string;
  required: boolean;
  nullable: boolean;
  default?: unknown;
  enum?: unknown[];
  min?: number;
  max?: number;
}

function joiFacts(rule: Joi.Description, required: boolean): Facts {
  const rules = (rule.rules ?? []) as { name: string; args?: { limit?: number } }[];
  const limit = (name: string) => rules.find((r) => r.name === name)?.args?.limit;
  const flags = (rule.flags ?? {}) as { only?: boolean; default?: unknown };
  const allowed = (rule.allow ?? []) as unknown[];
  const type = rule.type === 'number' && rules.some((r) => r.name === 'integer') ? 'integer' : (rule.type as string);
  const facts: Facts = { type, required, nullable: allowed.includes(null) };
  if (flags.default !== undefined) facts.default = flags.default;
  if (flags.only) facts.enum = allowed.filter((v) => v !== null).sort();
  if (limit('min') !== undefined) facts.min = limit('min');
  if (limit('max') !== undefined) facts.max = limit('max');
  return facts;
}

function schemaFacts(entry: SchemaObject | ReferenceObject, required: boolean): Facts {
  const schema = resolveSchema(entry);
  const types = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];
  return {
    type: schema.anyOf ? 'alternatives' : (types.find((t) => t !== 'null') as string),
    required,
    nullable: types.includes('null'),
    default: schema.default,
    enum: schema.enum?.filter((v: unknown) => v !== null).sort(),
    min: schema.minimum ?? schema.minLength,
    max: schema.maximum ?? schema.maxLength,
  };
}

function resolveSchema(entry: SchemaObject | ReferenceObject): SchemaObject {
  if (!('$ref' in entry)) return entry;
  return doc.components!.schemas![(entry as ReferenceObject).$ref.replace('#/components/schemas/', '')] as SchemaObject;
}

function resolveParameter(entry: ParameterObject | ReferenceObject): ParameterObject {
  return '$ref' in entry ? (doc.components!.parameters![entry.$ref.replace('#/components/parameters/', '')] as ParameterObject) : entry;
}

/**
 * Holds the document's fields to the Joi rules the gateway validates with: the same names, and for
 * each what Joi states (type, required, null, default, allowed values, bounds) said alike. The
 * document may say more (an enum of the catalogue's sizes where Joi checks the model later), and may
 * name fields read apart from the rules (`apart`: an edit's images), which must then be all it has beyond them.
 */
function expectAgreement(rules: Joi.ObjectSchema, fields: Record<string, { schema: SchemaObject | ReferenceObject; required: boolean }>, apart: string[] = []) {
  const keys = (rules.describe().keys ?? {}) as Record<string, Joi.Description>;
  expect(
    Object.keys(fields)
      .filter((name) => !(name in keys))
      .sort(),
  ).toEqual(apart.filter((name) => !(name in keys)).sort());
  expect(Object.keys(keys).filter((name) => !(name in fields))).toEqual([]);
  for (const [name, rule] of Object.entries(keys)) {
    const said = joiFacts(rule, (rule.flags as { presence?: string } | undefined)?.presence === 'required');
    const documented = schemaFacts(fields[name].schema, fields[name].required);
    const stated = Object.fromEntries(Object.keys(said).map((k) => [k, documented[k as keyof Facts]]));
    expect({ field: name, ...stated }).toEqual({ field: name, ...said });
  }
}

const bodyFields = (name: string) => {
  const schema = doc.components!.schemas![name] as SchemaObject;
  return Object.fromEntries(
    Object.entries(schema.properties ?? {}).map(([field, s]) => [field, { schema: s, required: schema.required?.includes(field) ?? false }]),
  );
};

const queryFields = (path: string) => {
  const op = (doc.paths![path] as Record<string, OperationObject>).get;
  return Object.fromEntries(
    (op.parameters ?? [])
      .map(resolveParameter)
      .filter((p) => p.in === 'query')
      .map((p) => [p.name, { schema: p.schema!, required: p.required ?? false }]),
  );
};

describe('request schemas agree with the gateway’s validation rules', () => {
  it('image generation', () => {
    expectAgreement(REQUEST_RULES.imageGeneration, bodyFields('ImageGenerationRequest'));
  });

  it('image edits (the images and the mask are read apart from the rules)', () => {
    expectAgreement(REQUEST_RULES.imageEdit, bodyFields('ImageEditRequest'), ['image', 'images', 'mask']);
  });

  it('remix', () => {
    expectAgreement(REQUEST_RULES.remix, bodyFields('VideoRemixRequest'));
  });

  it('video creation', () => {
    expectAgreement(REQUEST_RULES.video, bodyFields('VideoCreateRequest'));
  });

  it('callback recovery', () => {
    expectAgreement(REQUEST_RULES.recovery, bodyFields('CallbackRecoveryRequest'));
  });

  it('the query of the video and image lists', () => {
    expectAgreement(REQUEST_RULES.list, queryFields('/v1/videos'));
    expectAgreement(REQUEST_RULES.list, queryFields('/v1/images'));
  });

  it('the query of the callback list', () => {
    expectAgreement(REQUEST_RULES.callbackList, queryFields('/v1/callbacks'));
  });
});
