#!/usr/bin/env bash
# Regenerates the `replace` block of devcluster/go.mod: k8s.io/kubernetes requires
# every staging module at v0.0.0 and points them at ./staging in its own repo,
# which a dependent module cannot see. We replace each one with the published
# v0.MINOR.PATCH that matches the chosen k8s.io/kubernetes vMAJOR.MINOR.PATCH.
# Usage: hack/pin-staging.sh v1.37.2
set -euo pipefail
cd "$(dirname "$0")/.."
version="${1:?usage: pin-staging.sh vX.Y.Z}"
staging="v0.${version#v1.}"
modfile="$(go mod download -json "k8s.io/kubernetes@${version}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
args=()
while read -r mod; do
  args+=("-replace=${mod}=${mod}@${staging}")
done < <(sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\1#p' "$modfile")
go mod edit "${args[@]}"
go mod edit -require="k8s.io/kubernetes@${version}"
echo "pinned ${#args[@]} staging modules to ${staging}" >&2
