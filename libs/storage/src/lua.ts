import { join } from 'node:path';
import { LuaScript } from '@media/common';

/** The store's shared scripts and includes live in `libs/storage/lua/`, beside src/ and dist/ alike. */
const SHARED_LUA_DIR = join(__dirname, '..', 'lua');

/**
 * The loader of a capability package's scripts: `lua/<name>.lua` of the package whose directory is
 * `packageDir` (its `__dirname/..`), whose includes may also come from the store's shared ones
 * (listing indexes, the Overview's buckets, a job's status). See {@link LuaScript.load}.
 */
export const storeScripts =
  (packageDir: string) =>
  (name: string): LuaScript =>
    LuaScript.load(join(packageDir, 'lua'), name, [SHARED_LUA_DIR]);

/** One of the store's shared scripts, `libs/storage/lua/<name>.lua`. */
export const storeScript = (name: string): LuaScript => LuaScript.load(SHARED_LUA_DIR, name);
