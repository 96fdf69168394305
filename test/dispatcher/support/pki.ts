import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeLoopbackPki, type LoopbackPkiOptions } from '../../../tools/admin/src/local-pki';

/** A throwaway CA and a server certificate it signed, for a receiver at localhost / 127.0.0.1. */
export interface TestPki {
  dir: string;
  /** The CA certificate file, for CALLBACK_CA_FILE. */
  caFile: string;
  caPem: string;
  cert: string;
  key: string;
  cleanup(): void;
}

export type TestPkiOptions = Pick<LoopbackPkiOptions, 'keyType'>;

/** The same certificates `npm start` gives its local receiver, valid two days, in a directory of their own. */
export function makeTestPki(extraDnsNames: string[] = [], options: TestPkiOptions = {}): TestPki {
  const dir = mkdtempSync(join(tmpdir(), 'callback-pki-'));
  const files = writeLoopbackPki(dir, { days: 2, keyType: options.keyType, extraDnsNames });
  return {
    dir,
    caFile: files.caFile,
    caPem: readFileSync(files.caFile, 'utf8'),
    cert: readFileSync(files.certFile, 'utf8'),
    key: readFileSync(files.keyFile, 'utf8'),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}
