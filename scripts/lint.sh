#!/usr/bin/env bash
# `npm run lint`, and `npm test` before Jest: ESLint (eslint.config.mjs), Prettier's check
# (.prettierrc.json; `npm run format` rewrites the files) and dependency-cruiser (.dependency-cruiser.cjs:
# no import cycles, services and tools use libs only; it reads the built packages, so tsc -b first).
# All three run; a failure is named on the last line.
set -uo pipefail
cd "$(dirname "$0")/.."
failed=()
npx eslint --max-warnings 0 --cache --cache-location node_modules/.cache/eslint/ . || failed+=('ESLint')
npx prettier --check --log-level warn --cache . || failed+=('Prettier (npm run format rewrites the files)')
if npx tsc -b; then
  npx depcruise --config .dependency-cruiser.cjs libs services tools test bench scripts || failed+=('dependency-cruiser')
else
  failed+=('tsc -b (dependency-cruiser reads the built packages)')
fi
if [ "${#failed[@]}" -gt 0 ]; then
  summary=$(printf '%s; ' "${failed[@]}")
  echo "lint failed: ${summary%; } (details above)" >&2
  exit 1
fi
