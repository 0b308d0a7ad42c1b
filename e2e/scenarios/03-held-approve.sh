#!/usr/bin/env bash
# An App that requires approval is Held (exit code 3) and applies nothing; its diff shows the
# change; a stale plan hash is refused; approving the reviewed plan applies it.
source "$(dirname "$0")/../lib.sh"
app="$E2E_CLUSTER/e2e-gated"

apply_app e2e-gated
expect_code 3 "$WARDN" apps sync "$app" >/dev/null
if target get configmap e2e-gated-config -n "$E2E_NAMESPACE" >/dev/null 2>&1; then
  fail "a Held plan was applied"
fi
"$WARDN" apps diff "$app" | grep e2e-gated-config >/dev/null || fail "the diff does not show e2e-gated-config"
hash=$("$WARDN" apps get "$app" -o json | sed -n 's/^ *"planHash": "\([0-9a-f]*\)".*/\1/p')
[ -n "$hash" ] || fail "no planHash in: $("$WARDN" apps get "$app" -o json)"
expect_code 1 "$WARDN" apps approve "$app" --plan-hash 0000 >/dev/null 2>&1
expect_code 0 "$WARDN" apps approve "$app" --plan-hash "$hash" >/dev/null
target get configmap e2e-gated-config -n "$E2E_NAMESPACE" >/dev/null || fail "the approved plan was not applied"
say "ok"
