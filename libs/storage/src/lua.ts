import { join } from 'node:path';
import { LuaScript } from '@media/common';

/** The store's scripts live in `libs/storage/lua/`, beside src/ and dist/ alike. */
const LUA_DIR = join(__dirname, '..', 'lua');

/** One of the store's scripts, `lua/<name>.lua` (see {@link LuaScript.load}). */
export const storeScript = (name: string): LuaScript => LuaScript.load(LUA_DIR, name);
