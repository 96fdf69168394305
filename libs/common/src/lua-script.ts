import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Redis } from 'ioredis';

const INCLUDE = /^--- @include "([a-z0-9/-]+)"$/gm;

/**
 * A Lua script run by its SHA-1 (EVALSHA), so that a hot path sends a few bytes of arguments
 * rather than the script's text on every call; a Redis that has not seen it yet (restarted, or a
 * failover to a replica without it) answers NOSCRIPT, and the script is sent once with EVAL.
 *
 * Every script of the project is one of these, run this one way; its text lives in a `.lua` file
 * of its package's `lua/` folder, headed by what it does, its KEYS, ARGV and answers (BullMQ's
 * `src/commands/` convention).
 *
 * Deliberately not ioredis's `defineCommand`: every script defined on a connection is copied into
 * each pipeline and MULTI made on it, and BullMQ already defines dozens on the same connection.
 */
export class LuaScript {
  readonly sha: string;

  // Private: a script comes from its .lua file (load), where its header documents it, never from a
  // string in TypeScript.
  private constructor(readonly source: string) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  /**
   * A script from `<dir>/<name>.lua`, its `--- @include "includes/<part>"` lines replaced by those
   * files (BullMQ's convention). A package keeps its scripts in `lua/` beside `src/` and `dist/`, so
   * one path serves the tests (ts-jest) and the services (dist); call it once, at module load.
   * An include is looked for in `dir` first, then in each of `sharedDirs` (the parts several
   * packages' scripts share, such as the store's listing indexes).
   */
  static load(dir: string, name: string, sharedDirs: readonly string[] = []): LuaScript {
    return new LuaScript(expand([dir, ...sharedDirs], name, new Set()));
  }

  async run(redis: Redis, keys: string[], args: (string | number)[]): Promise<unknown> {
    try {
      return await redis.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
      return redis.eval(this.source, keys.length, ...keys, ...args);
    }
  }
}

/** `name` with its includes expanded; `within` holds the files being expanded, to refuse a cycle. */
function expand(dirs: readonly string[], name: string, within: Set<string>): string {
  if (within.has(name)) throw new Error(`Lua include cycle at ${name}`);
  within.add(name);
  const path = dirs.map((dir) => join(dir, `${name}.lua`)).find((candidate) => existsSync(candidate));
  if (!path) throw new Error(`Lua script ${name}.lua is in none of ${dirs.join(', ')}`);
  const text = readFileSync(path, 'utf8').replace(INCLUDE, (_line, part: string) => expand(dirs, part, within));
  within.delete(name);
  return text;
}
