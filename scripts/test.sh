#!/usr/bin/env bash
# `npm test`: everything a fresh machine needs, then the whole suite. Node from .nvmrc (fetched when
# the machine's is older), the system programs the tests run (installed when root), the npm packages
# and the build, the lint (scripts/lint.sh: ESLint, Prettier's check, import cycles), a Redis (a
# private one when none answers at REDIS_URL), then the type check of the tests and Jest.
#
# `npm test -- <paths or Jest options>`: just those tests, after the install and build (setup.sh,
# cheap when nothing changed) and with a Redis; no prerequisites, lint or type check of the tests
# (ts-jest still refuses a test that does not compile).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/use-node.sh
if [ $# -gt 0 ]; then
  bash scripts/setup.sh
  exec node scripts/with-redis.mjs -- npx jest "$@"
fi
node scripts/prerequisites.mjs
bash scripts/setup.sh
bash scripts/lint.sh
npx tsc -p test
exec node scripts/with-redis.mjs -- npx jest
