#!/usr/bin/env node
// The installed command: the compiled CLI (npm links this file at install, before any build).
require('../dist/main.js');
