#!/usr/bin/env bash
# Register the target cluster with curl (namespace allowlist: E2E_NAMESPACE); a non-https
# server URL is refused with 400; the cluster shows as connected.
source "$(dirname "$0")/../lib.sh"

kubeconfig=$(cat "$E2E_TARGET_KUBECONFIG")
server_url=$(sed -n 's/^ *server: *//p' "$E2E_TARGET_KUBECONFIG" | head -n 1)
body() {
  printf '{"name":"%s","server_url":"%s","namespaces":["%s"],"kubeconfig":"%s"}' \
    "$E2E_CLUSTER" "$1" "$E2E_NAMESPACE" "$(printf '%s\n' "$kubeconfig" | json_string)"
}
register() {
  curl -s -o "$E2E_WORK/register.json" -w '%{http_code}' -X POST "$WARDN_SERVER/api/v1/clusters" \
    -H "Authorization: Bearer $WARDN_TOKEN" -H 'Content-Type: application/json' --data-binary @-
}

code=$(body "${server_url/https:/http:}" | register)
[ "$code" = 400 ] || fail "a plain-http server_url answered $code: $(cat "$E2E_WORK/register.json")"

code=$(body "$server_url" | register)
case "$code" in
  201) ;;
  409) say "cluster $E2E_CLUSTER was registered already" ;;
  *) fail "registration answered $code: $(cat "$E2E_WORK/register.json")" ;;
esac

# The namespace the Apps deploy to exists on the target (kind clusters start without it).
target get namespace "$E2E_NAMESPACE" >/dev/null 2>&1 || target create namespace "$E2E_NAMESPACE" >/dev/null
for _ in $(seq 60); do
  grep -Eq "^$E2E_CLUSTER +connected" <<<"$("$WARDN" clusters list)" && break
  sleep 1
done
grep -Eq "^$E2E_CLUSTER +connected" <<<"$("$WARDN" clusters list)" \
  || fail "cluster $E2E_CLUSTER is not connected: $("$WARDN" clusters list)"
say "ok"
