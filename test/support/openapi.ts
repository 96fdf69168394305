import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { Express } from 'express';
import type { HeaderObject, OpenAPIObject, OperationObject, ParameterObject, ReferenceObject, ResponseObject, SchemaObject } from 'openapi3-ts/oas31';

const DOC_ID = 'openapi.json';

/** The keys of a document's root and the OpenAPI keywords of its Schema Objects: annotations to Ajv. */
const OPENAPI_WORDS = [
  'openapi',
  'info',
  'servers',
  'paths',
  'webhooks',
  'components',
  'security',
  'tags',
  'jsonSchemaDialect',
  'externalDocs',
  'discriminator',
  'xml',
  'example',
];

/** A response as `api()` and `readBody()` give it. */
export interface CheckedResponse {
  status: number;
  headers: Headers;
  text: string;
  json: unknown;
}

type Json = Record<string, unknown>;

/** `a/b~c` → `a~1b~0c`, and percent-encoded, as a URI fragment of a JSON pointer wants it. */
const pointer = (segments: (string | number)[]) =>
  `${DOC_ID}#/${segments.map((s) => encodeURIComponent(String(s).replace(/~/g, '~0').replace(/\//g, '~1'))).join('/')}`;

/** Ajv 2020-12 (the dialect of OpenAPI 3.1), strict, with the document's JSON formats. */
function newAjv(options: { coerceTypes?: boolean } = {}): Ajv2020 {
  // strictRequired would refuse `anyOf: [{required: [...]}]`, plain JSON Schema for "one of these fields".
  const ajv = new Ajv2020({ strict: true, strictRequired: false, allErrors: true, ...options });
  addFormats(ajv);
  ajv.addFormat('binary', true);
  ajv.addVocabulary(OPENAPI_WORDS);
  return ajv;
}

/**
 * Holds real HTTP exchanges to an OpenAPI 3.1 document: the status must be documented for the
 * operation, the required headers present and every documented header valid, the content type one
 * the response names, and a JSON body valid against its schema (Ajv, JSON Schema 2020-12). It
 * remembers which operations were checked, so a test can tell which ones no exchange reached.
 */
export class OpenApiContract {
  readonly checked = new Set<string>();
  private readonly ajv = newAjv();
  private readonly headerAjv = newAjv({ coerceTypes: true });
  private readonly compiled = new Map<string, ValidateFunction>();

  constructor(readonly doc: OpenAPIObject) {
    this.ajv.addSchema(doc as object, DOC_ID);
  }

  /** `GET /v1/videos/{id}` for every operation of the document's paths. */
  operations(): string[] {
    return Object.entries(this.doc.paths ?? {}).flatMap(([path, item]) =>
      Object.keys(item)
        .filter((method) => ['get', 'put', 'post', 'delete', 'patch'].includes(method))
        .map((method) => `${method.toUpperCase()} ${path}`),
    );
  }

  /** The validator of the schema at a JSON pointer into the document (compiled once). */
  validator(segments: (string | number)[]): ValidateFunction {
    const id = pointer(segments);
    let validate = this.compiled.get(id);
    if (!validate) {
      validate = this.ajv.getSchema(id);
      if (!validate) throw new Error(`no schema at ${id}`);
      this.compiled.set(id, validate);
    }
    return validate;
  }

  /** Whether `body` is a valid request body of the operation for `contentType`, and Ajv's complaints when not. */
  requestBody(operation: string, body: unknown, contentType = 'application/json'): { valid: boolean; errors: string } {
    const [method, path] = split(operation);
    const validate = this.validator(['paths', path, method, 'requestBody', 'content', contentType, 'schema']);
    const valid = validate(body) as boolean;
    return { valid, errors: this.ajv.errorsText(validate.errors) };
  }

  /** Fails unless the exchange is what the document says `operation` answers. */
  check(operation: string, res: CheckedResponse): void {
    const [method, path] = split(operation);
    const op = (this.doc.paths?.[path] as Record<string, OperationObject> | undefined)?.[method];
    if (!op) throw new Error(`${operation} is not in the document`);
    const where = ['paths', path, method, 'responses', String(res.status)];
    if (!op.responses?.[String(res.status)])
      throw new Error(`${operation} answered ${res.status}, which the document does not list: ${res.text.slice(0, 300)}`);
    const [response, at] = this.resolve<ResponseObject>(op.responses[String(res.status)], where);
    this.checkHeaders(`${operation} ${res.status}`, response.headers ?? {}, (name) => res.headers.get(name));
    const contentType = (res.headers.get('content-type') ?? '').split(';')[0].trim();
    if (!response.content) {
      expect({ operation, status: res.status, body: res.text }).toEqual({ operation, status: res.status, body: '' });
    } else {
      expect({ operation, status: res.status, contentType, documented: Object.keys(response.content).includes(contentType) }).toMatchObject({
        documented: true,
      });
      if (contentType === 'application/json') this.expectValid(`${operation} ${res.status}`, [...at, 'content', contentType, 'schema'], res.json, res.text);
    }
    this.checked.add(operation);
  }

  /** Fails unless a request the service sent is what the document's `webhooks` entry for `event` describes. */
  checkWebhook(event: string, request: { method: string; headers: Record<string, string>; body: string }): void {
    const op = (this.doc.webhooks?.[event] as Record<string, OperationObject> | undefined)?.post;
    if (!op) throw new Error(`webhook ${event} is not in the document`);
    expect(request.method).toBe('POST');
    const params = (op.parameters ?? []).map((p, i) => this.resolve<ParameterObject>(p, ['webhooks', event, 'post', 'parameters', i])[0]);
    const headers = Object.fromEntries(params.filter((p) => p.in === 'header').map((p) => [p.name, { required: p.required, schema: p.schema }] as const));
    this.checkHeaders(`webhook ${event}`, headers, (name) => request.headers[name.toLowerCase()] ?? null);
    const contentType = (request.headers['content-type'] ?? '').split(';')[0].trim();
    expect(Object.keys((op.requestBody as { content: object }).content)).toContain(contentType);
    this.expectValid(`webhook ${event}`, ['webhooks', event, 'post', 'requestBody', 'content', contentType, 'schema'], JSON.parse(request.body), request.body);
    this.checked.add(`webhook ${event}`);
  }

  private checkHeaders(what: string, documented: Record<string, HeaderObject | ReferenceObject>, get: (name: string) => string | null): void {
    for (const [name, entry] of Object.entries(documented)) {
      const [header] = this.resolve<HeaderObject>(entry, []);
      const value = get(name);
      if (value === null) {
        expect({ what, header: name, present: false, required: header.required ?? false }).toMatchObject({ required: false });
        continue;
      }
      // A header is text; the coercing validator reads `60` as the integer its schema names (inside an object, which it may rewrite).
      const validate = this.headerAjv.compile({ type: 'object', properties: { value: header.schema as SchemaObject } });
      const valid = validate({ value }) as boolean;
      expect({ what, header: name, value, valid, errors: valid ? null : this.headerAjv.errorsText(validate.errors) }).toMatchObject({ valid: true });
    }
  }

  private expectValid(what: string, segments: (string | number)[], body: unknown, text: string): void {
    const validate = this.validator(segments);
    const valid = validate(body) as boolean;
    expect({
      what,
      valid,
      errors: valid ? null : this.ajv.errorsText(validate.errors, { separator: '\n' }),
      body: valid ? null : text.slice(0, 1000),
    }).toMatchObject({ valid: true });
  }

  /** Follows a `$ref` within the document; returns the object and the pointer to it. */
  private resolve<T>(entry: T | ReferenceObject, at: (string | number)[]): [T, (string | number)[]] {
    if (!entry || typeof entry !== 'object' || !('$ref' in entry)) return [entry as T, at];
    const segments = entry.$ref
      .replace(/^#\//, '')
      .split('/')
      .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
    const target = segments.reduce<unknown>((node, s) => (node as Json)[s], this.doc);
    return this.resolve(target as T, segments);
  }
}

function split(operation: string): [string, string] {
  const [method, path] = operation.split(' ');
  return [method.toLowerCase(), path];
}

interface Layer {
  route?: { path: string | RegExp; methods: Record<string, boolean> };
  handle: { stack?: Layer[] };
  rawPath?: string | RegExp;
}

/**
 * Every route an Express 5 app has registered, as `GET /v1/videos/{id}`, with `:id` and `*key`
 * written as OpenAPI path parameters. Express keeps no list of its routes; this walks the router
 * stacks, joining each mounted router's path (`rawPath`) to its routes' paths.
 */
export function expressRoutes(app: Express): string[] {
  const routes: string[] = [];
  const text = (path: string | RegExp | undefined) => (path instanceof RegExp ? `(${path.source})` : (path ?? ''));
  const walk = (stack: Layer[], prefix: string) => {
    for (const layer of stack) {
      if (layer.route) {
        const own = text(layer.route.path);
        const path = (prefix + (own === '/' && prefix ? '' : own)).replace(/[:*]([A-Za-z0-9_]+)/g, '{$1}');
        for (const method of Object.keys(layer.route.methods).filter((m) => m !== '_all')) routes.push(`${method.toUpperCase()} ${path}`);
      } else if (layer.handle.stack) {
        const mount = text(layer.rawPath);
        walk(layer.handle.stack, prefix + (mount === '/' ? '' : mount));
      }
    }
  };
  walk((app as unknown as { router: { stack: Layer[] } }).router.stack, '');
  return routes;
}
