#!/usr/bin/env bash
# Installs dependencies when they are missing and builds every package (incremental).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm install --no-audit --no-fund 1>&2
fi
npx tsc -b 1>&2
# The dashboard's browser app (Vite): rebuilt only when its sources or the contract changed.
node libs/dashboard/web/build-if-stale.mjs 1>&2
