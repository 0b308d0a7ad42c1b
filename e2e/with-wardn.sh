#!/usr/bin/env bash
# Starts `wardn serve --apps` for the e2e scenarios against the clusters the caller provides
# (E2E_TARGET_KUBECONFIG; optionally E2E_WARDN_KUBECONFIG, the management cluster wardn
# serve gets as --kubeconfig), logs in, creates an API token and runs e2e/run-scenarios.sh.
# E2E_ROLES=split runs the split install instead: a `--role server` process, which the
# scenarios talk to, and a `--role operator` process reconciling the Apps through it.
# Binaries from E2E_BIN. The work directory is removed on exit unless E2E_KEEP=1.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${E2E_BIN:?set E2E_BIN to the directory of the wardn binary}
: "${E2E_TARGET_KUBECONFIG:?set E2E_TARGET_KUBECONFIG}"
work=$(mktemp -d "${TMPDIR:-/tmp}/wardn-e2e.XXXXXX")
pid=""
operator_pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi
  if [ -n "$operator_pid" ]; then kill "$operator_pid" 2>/dev/null || true; fi
  wait 2>/dev/null || true
  if [ "${E2E_KEEP:-0}" = 1 ]; then echo "e2e work directory kept: $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT INT TERM

export WARDN="$bin/wardn" KUBECTL=${KUBECTL:-kubectl}
export E2E_WORK="$work" E2E_APPS_DIR="$work/apps" WARDN_CONFIG_DIR="$work/config"
mkdir -p "$E2E_APPS_DIR" "$work/data"

# wardn reads --apps once at start here: declare every scenario App up front (the scenarios
# declare them again, which changes nothing).
WARDN_SERVER=unset WARDN_TOKEN=unset bash -c "source '$root/e2e/lib.sh' && prepare_all_apps"

WARDN_CREDENTIALS_KEY=$(head -c 32 /dev/urandom | base64)
WARDN_ADMIN_PASSWORD=$(head -c 18 /dev/urandom | base64)
export WARDN_CREDENTIALS_KEY WARDN_ADMIN_PASSWORD
management=()
[ -n "${E2E_WARDN_KUBECONFIG:-}" ] && management=(--kubeconfig "$E2E_WARDN_KUBECONFIG")
# Created here, not by the background job's redirection, which may run after the first read.
: > "$work/wardn.log"
roles=${E2E_ROLES:-all}
case "$roles" in
  all) serving=(--apps "$E2E_APPS_DIR") ;;
  split)
    WARDN_INTERNAL_TOKEN=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
    export WARDN_INTERNAL_TOKEN
    serving=(--role server)
    ;;
  *) echo "E2E_ROLES=$roles: expected all or split" >&2; exit 2 ;;
esac
"$WARDN" serve --listen 127.0.0.1:0 --data-dir "$work/data" "${serving[@]}" \
  "${management[@]}" > "$work/wardn.log" 2>&1 &
pid=$!
addr=""
for _ in $(seq 300); do
  addr=$(sed -n 's|^wardn: listening on http://\([0-9.:]*\).*|\1|p' "$work/wardn.log" | head -n 1)
  [ -n "$addr" ] && break
  sleep 0.1
done
[ -n "$addr" ] || { echo "wardn serve did not start:" >&2; cat "$work/wardn.log" >&2; exit 1; }
export WARDN_SERVER="http://$addr"
if [ "$roles" = split ]; then
  # Clusters registered or changed by a scenario reach the operator within a second.
  : > "$work/operator.log"
  "$WARDN" serve --role operator --server "$WARDN_SERVER" --listen 127.0.0.1:0 \
    --data-dir "$work/operator" --apps "$E2E_APPS_DIR" --cluster-cache-ttl 1 \
    "${management[@]}" > "$work/operator.log" 2>&1 &
  operator_pid=$!
fi
WARDN_PASSWORD="$WARDN_ADMIN_PASSWORD" "$WARDN" login --server "$WARDN_SERVER" >/dev/null
WARDN_TOKEN=$("$WARDN" tokens create e2e)
export WARDN_TOKEN

if ! bash "$root/e2e/run-scenarios.sh"; then
  echo "--- wardn log (tail)" >&2
  tail -n 40 "$work/wardn.log" >&2
  if [ "$roles" = split ]; then
    echo "--- operator log (tail)" >&2
    tail -n 40 "$work/operator.log" >&2
  fi
  exit 1
fi
