#!/usr/bin/env node
// The installed command: the compiled CLI (npm links this file at install, before any build).
// The package is CommonJS, so the entry point is loaded with require.
// eslint-disable-next-line @typescript-eslint/no-require-imports
require('../dist/main.js');
