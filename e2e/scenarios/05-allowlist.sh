#!/usr/bin/env bash
# An App deploying outside the cluster's namespace allowlist is refused with 403 and nothing
# is written to the cluster.
source "$(dirname "$0")/../lib.sh"
app="$E2E_CLUSTER/e2e-outside"

apply_app e2e-outside
out=$("$WARDN" apps sync "$app" 2>&1) && fail "a sync outside the allowlist succeeded: $out"
grep -q 403 <<<"$out" || fail "expected a 403, got: $out"
if target get configmap e2e-outside-config -n "$E2E_FORBIDDEN_NAMESPACE" >/dev/null 2>&1; then
  fail "an object outside the allowlist was written"
fi
# The refused App reports Failed (polled: a run under load once read something else here;
# the last answer is shown if it never does).
shown=""
for _ in $(seq 60); do
  shown=$("$WARDN" apps get "$app" -o json 2>&1) && grep -q '"phase": "Failed"' <<<"$shown" && break
  shown="not Failed: $shown"
  sleep 0.5
done
case "$shown" in "not Failed: "*) fail "e2e-outside is $shown" ;; esac
say "ok"
