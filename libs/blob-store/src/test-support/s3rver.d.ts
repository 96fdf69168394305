// The part of @20minutes/s3rver (a maintained fork of s3rver; it ships no types) that the tests use.
declare module '@20minutes/s3rver' {
  import type { Server } from 'node:http';
  import type { AddressInfo } from 'node:net';

  interface KoaContext {
    method: string;
    path: string;
    app: object;
  }

  class S3rver {
    constructor(options: Record<string, unknown>);
    run(): Promise<AddressInfo>;
    close(): Promise<void>;
    httpServer?: Server;
    /** Koa's middleware list; s3rver composes it when it starts listening. */
    middleware: ((ctx: KoaContext, next: () => Promise<unknown>) => unknown)[];
  }

  export = S3rver;
}
