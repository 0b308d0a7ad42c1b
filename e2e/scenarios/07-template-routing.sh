#!/usr/bin/env bash
# A destination cluster chosen by a template over the App's labels: env=target resolves to the
# registered cluster and syncs there; env=elsewhere resolves to an unregistered cluster, so the
# App fails naming it and nothing is written anywhere.
source "$(dirname "$0")/../lib.sh"

apply_app e2e-routed
expect_code 0 "$WARDN" apps sync "$E2E_CLUSTER/e2e-routed" --wait --timeout 5m >/dev/null
routed=$(target get configmap e2e-routed-config -n "$E2E_NAMESPACE" -o jsonpath='{.data.routed}')
[ "$routed" = by-template ] || fail "e2e-routed-config says '$routed'"
shown=$("$WARDN" apps get "$E2E_CLUSTER/e2e-routed" -o json)
grep -q '"clusterTemplate": "{{ if eq' <<<"$shown" \
  || fail "the App does not show its cluster template: $shown"

# Declared without apply_app: it is known under the cluster its template resolved to.
place_source e2e-misrouted
if [ -n "${E2E_MGMT_KUBECONFIG:-}" ]; then
  app_yaml e2e-misrouted | "$KUBECTL" --kubeconfig "$E2E_MGMT_KUBECONFIG" apply -f - >/dev/null
else
  app_yaml e2e-misrouted > "$E2E_APPS_DIR/e2e-misrouted.yaml"
fi
shown=""
for _ in $(seq 120); do
  shown=$("$WARDN" apps get elsewhere-cluster/e2e-misrouted -o json 2>&1) \
    && grep -q '"phase": "Failed"' <<<"$shown" && break
  shown="not Failed: $shown"
  sleep 0.5
done
case "$shown" in "not Failed: "*) fail "e2e-misrouted is $shown" ;; esac
grep -q 'elsewhere-cluster\\" is not registered' <<<"$shown" \
  || fail "the failure does not name the unregistered cluster: $shown"
if target get configmap e2e-misrouted-config -n "$E2E_NAMESPACE" >/dev/null 2>&1; then
  fail "a misrouted App wrote to the target cluster"
fi
say "ok"
