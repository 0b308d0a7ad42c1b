#!/usr/bin/env bash
# The seed's troubleshooting case "permission denied": a cluster registered with a kubeconfig
# whose ServiceAccount may only read ConfigMaps. Syncing an App there fails, and both the CLI
# and the App's status name the verb and the resource the cluster refused; nothing is written.
source "$(dirname "$0")/../lib.sh"
ns=$E2E_NAMESPACE

target apply -f - >/dev/null <<YAML
apiVersion: v1
kind: ServiceAccount
metadata: {name: e2e-reader, namespace: $ns}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: e2e-reader, namespace: $ns}
rules:
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["get", "list", "watch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: e2e-reader, namespace: $ns}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: e2e-reader}
subjects:
- {kind: ServiceAccount, name: e2e-reader, namespace: $ns}
---
apiVersion: v1
kind: Secret
metadata:
  name: e2e-reader-token
  namespace: $ns
  annotations: {kubernetes.io/service-account.name: e2e-reader}
type: kubernetes.io/service-account-token
YAML
token=""
for _ in $(seq 100); do
  token=$(target get secret e2e-reader-token -n "$ns" -o jsonpath='{.data.token}' 2>/dev/null | base64 -d 2>/dev/null || true)
  [ -n "$token" ] && break
  sleep 0.2
done
[ -n "$token" ] || fail "the token controller did not fill e2e-reader-token"

# A kubeconfig of the reader: the target's server and CA, the ServiceAccount's token.
server_url=$(sed -n 's/^ *server: *//p' "$E2E_TARGET_KUBECONFIG" | head -n 1)
ca=$(sed -n 's/^ *certificate-authority-data: *//p' "$E2E_TARGET_KUBECONFIG" | head -n 1)
kc=$(printf 'apiVersion: v1\nkind: Config\nclusters:\n- name: limited\n  cluster:\n    server: %s\n    certificate-authority-data: %s\nusers:\n- name: reader\n  user:\n    token: %s\ncontexts:\n- name: limited\n  context: {cluster: limited, user: reader}\ncurrent-context: limited\n' \
  "$server_url" "$ca" "$token" | json_string)
code=$(api POST /api/v1/clusters "{\"name\":\"e2e-limited\",\"server_url\":\"$server_url\",\"kubeconfig\":\"$kc\",\"namespaces\":[\"$ns\"]}")
case "$code" in 201|409) ;; *) fail "registration answered $code: $(cat "$E2E_WORK/api.json")" ;; esac

apply_app e2e-limited e2e-limited
out=$("$WARDN" apps sync e2e-limited/e2e-limited 2>&1) && fail "a sync without write access succeeded: $out"
refused='cannot [a-z]* resource \\\?"configmaps\\\?"'
grep -q "$refused" <<<"$out" || fail "the sync's error does not name the verb and resource: $out"
shown=$("$WARDN" apps get e2e-limited/e2e-limited -o json)
grep -q "$refused" <<<"$shown" || fail "the App's status does not name the verb and resource: $shown"
if target get configmap e2e-limited-config -n "$ns" >/dev/null 2>&1; then
  fail "an object was written without write access"
fi
say "ok"
