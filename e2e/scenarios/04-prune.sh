#!/usr/bin/env bash
# Removing an object from the source prunes it; an object made with kubectl is never pruned.
source "$(dirname "$0")/../lib.sh"
app="$E2E_CLUSTER/e2e-web"

target get configmap e2e-web-extra -n "$E2E_NAMESPACE" >/dev/null || fail "run 02-sync first"
target create configmap e2e-handmade -n "$E2E_NAMESPACE" --from-literal=made=by-hand >/dev/null
rm "$E2E_WORK/src/e2e-web/extra.yaml"
for _ in $(seq 60); do
  expect_code 0 "$WARDN" apps sync "$app" --wait --timeout 5m >/dev/null
  target get configmap e2e-web-extra -n "$E2E_NAMESPACE" >/dev/null 2>&1 || break
  sleep 1
done
if target get configmap e2e-web-extra -n "$E2E_NAMESPACE" >/dev/null 2>&1; then
  fail "e2e-web-extra was not pruned"
fi
target get configmap e2e-web-config -n "$E2E_NAMESPACE" >/dev/null || fail "a rendered object was pruned"
target get configmap e2e-handmade -n "$E2E_NAMESPACE" >/dev/null || fail "a kubectl-made object was pruned"
say "ok"
