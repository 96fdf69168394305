import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One span as OTLP/JSON carries it, with its attributes made plain. */
export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  startMs: number;
  endMs: number;
  attributes: Record<string, string | number | boolean>;
  /** OTLP's status code: 0 unset, 1 ok, 2 error. */
  status: number;
  /** The W3C `tracestate` the span was exported with ('' for none); likewise each link's. */
  traceState: string;
  links: { traceId: string; spanId: string; traceState: string }[];
}

type AnyValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
type KeyValue = { key: string; value: AnyValue };

const plain = (value: AnyValue): string | number | boolean =>
  value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : (value.boolValue ?? value.doubleValue ?? ''));
const attributes = (list: KeyValue[] = []) => Object.fromEntries(list.map((a) => [a.key, plain(a.value)]));

/**
 * An OTLP/HTTP trace receiver on loopback, as a collector's `otlphttp` receiver is: it takes the
 * exporters' `POST /v1/traces` (OTLP/JSON), decodes every span, answers as OTLP says (200 with an
 * export response), and keeps what it got for the test to read.
 */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  /** Bodies that were not OTLP/JSON trace exports: should stay empty. */
  readonly rejected: string[] = [];

  private readonly server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      if (req.method !== 'POST' || req.url !== '/v1/traces' || !String(req.headers['content-type']).startsWith('application/json')) {
        this.rejected.push(`${req.method} ${req.url} ${String(req.headers['content-type'])}`);
        res.writeHead(404).end();
        return;
      }
      try {
        this.take(JSON.parse(body));
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      } catch (err) {
        this.rejected.push(String(err));
        res.writeHead(400).end();
      }
    });
  });

  static async start(): Promise<OtlpReceiver> {
    const receiver = new OtlpReceiver();
    await new Promise<void>((resolve) => receiver.server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  get endpoint(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** The spans of one trace, by start time. */
  trace(traceId: string): ReceivedSpan[] {
    return this.spans.filter((s) => s.traceId === traceId).sort((a, b) => a.startMs - b.startMs);
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private take(body: { resourceSpans?: { resource?: { attributes?: KeyValue[] }; scopeSpans?: { spans?: Record<string, unknown>[] }[] }[] }): void {
    for (const resourceSpans of body.resourceSpans ?? []) {
      const service = String(attributes(resourceSpans.resource?.attributes)['service.name'] ?? '');
      for (const scope of resourceSpans.scopeSpans ?? []) {
        for (const span of scope.spans ?? []) {
          const s = span as {
            traceId: string;
            spanId: string;
            parentSpanId?: string;
            name: string;
            kind: number;
            startTimeUnixNano: string;
            endTimeUnixNano: string;
            attributes?: KeyValue[];
            status?: { code?: number };
            traceState?: string;
            links?: { traceId: string; spanId: string; traceState?: string }[];
          };
          this.spans.push({
            service,
            traceId: s.traceId,
            spanId: s.spanId,
            parentSpanId: s.parentSpanId ?? '',
            name: s.name,
            kind: s.kind,
            startMs: Number(BigInt(s.startTimeUnixNano) / 1_000_000n),
            endMs: Number(BigInt(s.endTimeUnixNano) / 1_000_000n),
            attributes: attributes(s.attributes),
            status: s.status?.code ?? 0,
            traceState: s.traceState ?? '',
            links: (s.links ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId, traceState: l.traceState ?? '' })),
          });
        }
      }
    }
  }
}
