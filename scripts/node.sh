#!/usr/bin/env bash
# `bash scripts/node.sh <command…>`: runs the command on the Node release of .nvmrc (see
# use-node.sh). exec, so that signals sent to npm's script reach the command itself. npm runs a
# script as `sh -c '<script>'`, and passes SIGINT and SIGTERM only to that sh; dash does not exec a
# lone command, and dies of SIGTERM (or waits out SIGINT) without passing it on. So a long-running
# script starts with `exec bash scripts/node.sh …` (see `start` in package.json): then npm's child
# is the node process itself.
set -euo pipefail
source "$(dirname "$0")/use-node.sh"
exec "$@"
