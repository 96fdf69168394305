#!/usr/bin/env bash
# Installs dependencies when they are missing and builds every package (incremental).
# Runs before npm start / npm test / npm run admin, so a no-op call has to be cheap: `tsc -b` is
# skipped when nothing it reads changed since the last successful build here (see below).
# `npm run build` (or SETUP_FORCE_BUILD=1) always runs tsc -b.
set -euo pipefail
cd "$(dirname "$0")/.."
# The Node release of .nvmrc first (fetched when the machine's is older), before anything else runs:
# npm runs `prestart` and `preadmin` on the machine's node, and an `npm ci` on an older Node warns
# (EBADENGINE) about every package whose `engines` asks for a newer one. The npm on PATH then runs
# on that Node too, and so do the build steps below.
source scripts/use-node.sh
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "installing dependencies (npm ci) on Node $(node -v)" >&2
  npm ci --no-audit --no-fund 1>&2
fi

# The stamp's mtime is the start of the last successful `tsc -b`. Anything newer means a rebuild:
# a source or config file (*.ts, *.tsx, *.mts, *.cts, *.json) under libs, services or tools, a
# directory there (a file added, deleted or renamed, or a dist/ removed), the root tsconfigs, or the
# installed dependencies. dist/ and node_modules/ are outputs, not inputs. The stamp lives in
# node_modules (git-ignored; a fresh install starts without one, so it builds).
stamp=node_modules/.cache/media-callbacks/tsc-build.stamp
needs_build() {
  [ "${SETUP_FORCE_BUILD:-}" = 1 ] && return 0
  [ -f "$stamp" ] || return 0
  local newer
  newer=$(find tsconfig.json tsconfig.base.json package.json node_modules/.package-lock.json \
    -newer "$stamp" -print -quit 2>/dev/null || true)
  [ -n "$newer" ] && return 0
  newer=$(find libs services tools \( -name node_modules -o -name dist \) -prune -o \
    \( -type d -o -name '*.ts' -o -name '*.tsx' -o -name '*.mts' -o -name '*.cts' -o -name '*.json' \) \
    -newer "$stamp" -print -quit)
  [ -n "$newer" ]
}
if needs_build; then
  mkdir -p "$(dirname "$stamp")"
  # Taken before the build, so an edit made while tsc runs is seen next time.
  touch "$stamp.next"
  npx tsc -b 1>&2
  mv -f "$stamp.next" "$stamp"
fi
# The dashboard's browser app (Vite): rebuilt only when its sources or the contract changed.
node libs/dashboard/web/build-if-stale.mjs 1>&2
