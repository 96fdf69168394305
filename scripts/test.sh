#!/usr/bin/env bash
# `npm test [-- jest args]`: everything a fresh machine needs, then the suite. Node from .nvmrc
# (fetched when the machine's is older), the system programs the tests run (installed when root),
# the npm packages and the build, the lint (scripts/lint.sh: ESLint, Prettier's check, import cycles),
# a Redis (a private one when none answers at REDIS_URL), then the type check of the tests and Jest.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/use-node.sh
node scripts/prerequisites.mjs
bash scripts/setup.sh
bash scripts/lint.sh
npx tsc -p test
exec node scripts/with-redis.mjs -- npx jest "$@"
