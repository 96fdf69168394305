#!/usr/bin/env bash
# `bash scripts/node.sh <command…>`: runs the command on the Node release of .nvmrc (see
# use-node.sh). exec, so that signals sent to npm's script reach the command itself.
set -euo pipefail
source "$(dirname "$0")/use-node.sh"
exec "$@"
