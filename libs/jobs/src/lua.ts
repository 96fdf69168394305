import { join } from 'node:path';
import { storeScripts } from '@media/storage';

/** One of this package's scripts, `lua/<name>.lua` beside src/ and dist/ (includes: its own, then the store's shared ones). */
export const storeScript = storeScripts(join(__dirname, '..'));
