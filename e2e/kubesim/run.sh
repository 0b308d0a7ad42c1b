#!/usr/bin/env bash
# The e2e scenarios on kubesim: starts a kubesim target cluster (unless E2E_TARGET_KUBECONFIG
# names one already running, as the Rust test tests/e2e_kubesim.rs does), then e2e/with-wardn.sh
# (wardn serve, login, token, the scenarios). Binaries from E2E_BIN (default:
# $CARGO_TARGET_DIR/debug, built by `make build`). Stops what it started on exit.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${E2E_BIN:-${CARGO_TARGET_DIR:-$root/target}/debug}
dir=$(mktemp -d "${TMPDIR:-/tmp}/wardn-kubesim.XXXXXX")
pid=""
cleanup() { if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi; wait 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT INT TERM

export E2E_NAMESPACE=${E2E_NAMESPACE:-e2e} E2E_CLUSTER=${E2E_CLUSTER:-e2e-target}
if [ -z "${E2E_TARGET_KUBECONFIG:-}" ]; then
  "$bin/kubesim" serve --clusters "$E2E_CLUSTER" --dir "$dir" \
    --namespaces "$E2E_NAMESPACE" --ready-delay-ms 0 > "$dir/kubesim.log" 2>&1 &
  pid=$!
  export E2E_TARGET_KUBECONFIG="$dir/$E2E_CLUSTER.kubeconfig"
  for _ in $(seq 200); do [ -s "$E2E_TARGET_KUBECONFIG" ] && break; sleep 0.1; done
  [ -s "$E2E_TARGET_KUBECONFIG" ] || { cat "$dir/kubesim.log" >&2; exit 1; }
fi
if [ -z "${KUBECTL:-}" ] && [ -x /usr/lib/google-cloud-sdk/bin/kubectl.1.32 ]; then
  export KUBECTL=/usr/lib/google-cloud-sdk/bin/kubectl.1.32
fi
E2E_BIN="$bin" bash "$root/e2e/with-wardn.sh"
