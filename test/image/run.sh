#!/usr/bin/env bash
# `npm run test:image`: the container image, built from the Dockerfile and run as Kubernetes runs
# it (test/image/image-test.ts says how). Not part of `npm test`: it takes minutes and needs root.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/use-node.sh
node scripts/prerequisites.mjs test:image
bash scripts/setup.sh
exec node scripts/with-redis.mjs -- npx tsx test/image/image-test.ts "$@"
