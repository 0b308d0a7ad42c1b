#!/usr/bin/env bash
# Declare an automated App and wait until it is Synced; its objects are on the target.
source "$(dirname "$0")/../lib.sh"

apply_app e2e-web
expect_code 0 "$WARDN" apps sync "$E2E_CLUSTER/e2e-web" --wait --timeout 5m >/dev/null
greeting=$(target get configmap e2e-web-config -n "$E2E_NAMESPACE" -o jsonpath='{.data.greeting}')
[ "$greeting" = hello ] || fail "e2e-web-config greeting is '$greeting'"
target get deployment e2e-web -n "$E2E_NAMESPACE" >/dev/null || fail "no Deployment e2e-web"
"$WARDN" apps list --cluster "$E2E_CLUSTER" | grep -E '^e2e-web +[^ ]+ +Synced' >/dev/null \
  || fail "e2e-web is not listed as Synced: $("$WARDN" apps list)"
say "ok"
