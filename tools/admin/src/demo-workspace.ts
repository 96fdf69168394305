import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { WorkspaceRepository } from '@media/accounts';

/** What `var/demo-workspace.json` holds (the README's examples read it). */
export interface DemoWorkspace {
  workspace_id: string;
  api_key: string;
  /** The secret that signs now: after a rotation, the new one. */
  signing_secret: string;
  dashboard: { url: string; email: string; password: string; role: string };
}

/** `var/demo-workspace.json`: credentials, so mode 0600, and replaced whole so a reader never sees half of it. */
export class DemoWorkspaceFile {
  /**
   * @param path - where the file is
   * @param label - how messages name it (relative to the repository when inside it)
   */
  constructor(
    readonly path: string,
    readonly label = path,
  ) {}

  async read(): Promise<DemoWorkspace | undefined> {
    return existsSync(this.path) ? (JSON.parse(await readFile(this.path, 'utf8')) as DemoWorkspace) : undefined;
  }

  async write(demo: DemoWorkspace): Promise<void> {
    await mkdir(dirname(this.path), { recursive: true });
    const next = `${this.path}.${process.pid}.tmp`;
    await writeFile(next, JSON.stringify(demo, null, 2), { mode: 0o600 });
    // writeFile's mode applies only to a file it creates; a leftover from a crash keeps its own.
    await chmod(next, 0o600);
    await rename(next, this.path);
  }
}

/**
 * The demo workspace's signing secrets as the store has them now, whoever rotated them (the admin
 * CLI, the dashboard), with `var/demo-workspace.json` kept in step: when the current secret is not
 * the file's, the file is rewritten with it. The local receiver asks on every delivery; the
 * launcher also asks every few seconds, so the file follows a rotation that no delivery follows.
 */
export class DemoSecrets {
  #demo: DemoWorkspace;
  #last: string[] = [];
  #timer: NodeJS.Timeout | undefined;
  /** Writes in the order the rotations were seen: two at once would race on the file. */
  #writes: Promise<void> = Promise.resolve();

  constructor(
    private readonly workspaces: WorkspaceRepository,
    private readonly file: DemoWorkspaceFile,
    demo: DemoWorkspace,
    private readonly log: (line: string) => void,
  ) {
    this.#demo = demo;
  }

  /** The secrets that sign now, newest first. While the store cannot answer, the last ones it gave. */
  async current(): Promise<string[]> {
    let secrets: string[];
    try {
      secrets = await this.workspaces.activeSecrets(this.#demo.workspace_id);
    } catch (err) {
      if (this.#last.length > 0) return this.#last;
      throw err;
    }
    // None left means the workspace is gone (a deleted key prefix); what it had is the best guess.
    if (secrets.length === 0) return this.#last;
    this.#last = secrets;
    if (secrets[0] !== this.#demo.signing_secret) {
      const demo = { ...this.#demo, signing_secret: secrets[0]! };
      this.#demo = demo;
      const write = this.#writes.then(() => this.file.write(demo));
      this.#writes = write.catch(() => undefined);
      // The secrets are right whatever becomes of the file; a delivery must not fail over it.
      await write.then(
        () => this.log(`the demo workspace's signing secret was rotated; ${this.file.label} now holds the new one`),
        (err: Error) => this.log(`the demo workspace's signing secret was rotated, but ${this.file.label} could not be rewritten: ${err.message}`),
      );
    }
    return secrets;
  }

  /** Asks the store every `everyMs` until {@link DemoSecrets.close}. */
  follow(everyMs: number): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => void this.current().catch(() => undefined), everyMs);
    this.#timer.unref();
  }

  /** Safe to call twice. */
  close(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }
}
