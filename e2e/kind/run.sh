#!/usr/bin/env bash
# The same e2e scenarios on real clusters: creates two kind clusters (a management cluster
# and a target), installs the App CRD on the management cluster, then runs e2e/with-wardn.sh
# (wardn serve on this machine, the scenarios unchanged). Needs docker, kind and kubectl.
# The clusters are deleted on exit unless E2E_KEEP=1.
#   E2E_KIND_PREFIX   cluster name prefix (default: wardn-e2e)
#   KIND_NODE_IMAGE   node image, e.g. kindest/node:v1.32.2 (default: kind's own)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${E2E_BIN:-${CARGO_TARGET_DIR:-$root/target}/debug}
prefix=${E2E_KIND_PREFIX:-wardn-e2e}
mgmt="$prefix-mgmt"
target="$prefix-target"
for tool in docker kind "${KUBECTL:-kubectl}"; do
  command -v "$tool" >/dev/null || { echo "e2e-kind needs $tool on PATH" >&2; exit 1; }
done
dir=$(mktemp -d "${TMPDIR:-/tmp}/wardn-kind.XXXXXX")
cleanup() {
  if [ "${E2E_KEEP:-0}" != 1 ]; then
    kind delete cluster --name "$mgmt" >/dev/null 2>&1 || true
    kind delete cluster --name "$target" >/dev/null 2>&1 || true
  fi
  rm -rf "$dir"
}
trap cleanup EXIT INT TERM

image=()
[ -n "${KIND_NODE_IMAGE:-}" ] && image=(--image "$KIND_NODE_IMAGE")
for name in "$mgmt" "$target"; do
  grep -qx -- "$name" <<<"$(kind get clusters 2>/dev/null)" \
    || kind create cluster --name "$name" "${image[@]}" --wait 180s
  # The API server on 127.0.0.1 (the default), reachable by wardn serve on this machine.
  kind get kubeconfig --name "$name" > "$dir/$name.kubeconfig"
done

export KUBECTL=${KUBECTL:-kubectl}
"$bin/wardn" crd | "$KUBECTL" --kubeconfig "$dir/$mgmt.kubeconfig" apply -f - >/dev/null
export E2E_CLUSTER=${E2E_CLUSTER:-e2e-target}
export E2E_TARGET_KUBECONFIG="$dir/$target.kubeconfig"
export E2E_WARDN_KUBECONFIG="$dir/$mgmt.kubeconfig"
E2E_BIN="$bin" bash "$root/e2e/with-wardn.sh"
