#!/usr/bin/env bash
# Shared by the e2e scenarios and runners. The environment a scenario runs against:
#   WARDN_SERVER, WARDN_TOKEN   the wardn server and an API token (wardn CLI and curl)
#   WARDN                       the wardn CLI (default: wardn)
#   KUBECTL                     kubectl (default: kubectl)
#   E2E_TARGET_KUBECONFIG       kubeconfig of the cluster the Apps deploy to
#   E2E_CLUSTER                 the name it is registered under (default: e2e-target)
#   E2E_NAMESPACE               the namespace the cluster's allowlist permits (default: e2e)
#   E2E_FORBIDDEN_NAMESPACE     a namespace outside that allowlist (default: e2e-forbidden)
#   E2E_WORK                    a directory wardn reads Directory sources from (src/NAME)
#   E2E_APPS_DIR                wardn's --apps directory: Apps are written there; or
#   E2E_MGMT_KUBECONFIG         Apps are applied as App resources to this management cluster
set -euo pipefail

E2E_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WARDN=${WARDN:-wardn}
KUBECTL=${KUBECTL:-kubectl}
E2E_CLUSTER=${E2E_CLUSTER:-e2e-target}
E2E_NAMESPACE=${E2E_NAMESPACE:-e2e}
E2E_FORBIDDEN_NAMESPACE=${E2E_FORBIDDEN_NAMESPACE:-e2e-forbidden}
: "${WARDN_SERVER:?set WARDN_SERVER}" "${WARDN_TOKEN:?set WARDN_TOKEN}"
: "${E2E_TARGET_KUBECONFIG:?set E2E_TARGET_KUBECONFIG}" "${E2E_WORK:?set E2E_WORK}"
export WARDN_SERVER WARDN_TOKEN

say() { echo "[e2e $(basename "$0" .sh)] $*" >&2; }
fail() { say "FAILED: $*"; exit 1; }
target() { "$KUBECTL" --kubeconfig "$E2E_TARGET_KUBECONFIG" "$@"; }

# `expect_code N CMD...`: runs CMD, fails unless it exits with N; its stdout goes to stdout.
expect_code() {
  local want=$1; shift
  local code=0
  "$@" || code=$?
  [ "$code" = "$want" ] || fail "'$*' exited $code, expected $want"
}

# The App YAML of e2e/apps/NAME.yaml for this environment.
app_yaml() {
  sed -e "s|@CLUSTER@|$E2E_CLUSTER|g" -e "s|@NAMESPACE@|$E2E_NAMESPACE|g" \
      -e "s|@FORBIDDEN@|$E2E_FORBIDDEN_NAMESPACE|g" -e "s|@SRC@|$E2E_WORK/src|g" \
      "$E2E_DIR/apps/$1.yaml"
}

# Puts App NAME's source (e2e/sources/NAME) under $E2E_WORK/src/NAME, unless it is there.
place_source() {
  local dest="$E2E_WORK/src/$1"
  [ -d "$dest" ] || { mkdir -p "$dest" && cp -r "$E2E_DIR/sources/$1/." "$dest/"; }
}

# `output_has PATTERN CMD...`: runs CMD and succeeds when its stdout matches the grep
# PATTERN. The whole output is read first: `CMD | grep -q` under pipefail fails at random
# when grep stops reading early and CMD dies of SIGPIPE on its next line.
output_has() {
  local pattern=$1 out
  shift
  out=$("$@") || return 1
  grep -q -- "$pattern" <<<"$out"
}

# A string as the body of a JSON string (escapes, newlines as \n).
json_string() { sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/\t/\\t/g' | awk 'BEGIN { ORS = "" } { print $0 "\\n" }'; }

# `api METHOD PATH [BODY]`: calls the wardn API with the token; the answer's body goes to
# $E2E_WORK/api.json, its HTTP status to stdout.
api() {
  local body=()
  [ $# -ge 3 ] && body=(--data-binary "$3")
  curl -s -o "$E2E_WORK/api.json" -w '%{http_code}' -X "$1" "$WARDN_SERVER$2" \
    -H "Authorization: Bearer $WARDN_TOKEN" -H 'Content-Type: application/json' "${body[@]}"
}

# Declares App NAME (deploying to cluster CLUSTER, default E2E_CLUSTER): its source in
# place, and the App in the apps directory or the management cluster.
apply_app() {
  place_source "$1"
  if [ -n "${E2E_MGMT_KUBECONFIG:-}" ]; then
    app_yaml "$1" | "$KUBECTL" --kubeconfig "$E2E_MGMT_KUBECONFIG" apply -f - >/dev/null
  else
    : "${E2E_APPS_DIR:?set E2E_APPS_DIR or E2E_MGMT_KUBECONFIG}"
    local file="$E2E_APPS_DIR/$1.yaml"
    app_yaml "$1" > "$file.new"
    if cmp -s "$file.new" "$file"; then rm "$file.new"; else mv "$file.new" "$file"; fi
  fi
  # Until wardn knows the App, the API answers 404.
  local cluster=${2:-$E2E_CLUSTER}
  for _ in $(seq 120); do
    "$WARDN" apps get "$cluster/$1" >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  fail "wardn does not know App $cluster/$1"
}

# Every App of e2e/apps declared at once (runners whose wardn reads --apps once at start).
prepare_all_apps() {
  local f
  for f in "$E2E_DIR"/apps/*.yaml; do
    local name; name=$(basename "$f" .yaml)
    place_source "$name"
    app_yaml "$name" > "$E2E_APPS_DIR/$name.yaml"
  done
}
