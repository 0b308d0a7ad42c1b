#!/usr/bin/env bash
# The seed tutorial "Staging + Production", end to end: register `staging` and `production`
# with the tutorial's curl calls (production with the allowlist ["production"]; both point at
# the target cluster here), declare both Apps, staging syncs, production is Held until
# approved; bump staging's image, let it sync, promote staging to production
# (`POST /api/v1/apps/staging/my-app-staging/promote?to=my-app-production`), approve, and check
# with kubectl that production's Pods run exactly the digest staging's Pods run. Then the
# tutorial's troubleshooting cases: a connection test of a stopped cluster names the cause,
# and an App deploying outside production's allowlist shows the 403.
source "$(dirname "$0")/../lib.sh"

kubeconfig=$(cat "$E2E_TARGET_KUBECONFIG")
server_url=$(sed -n 's/^ *server: *//p' "$E2E_TARGET_KUBECONFIG" | head -n 1)
kc=$(printf '%s\n' "$kubeconfig" | json_string)

# Step 1: register both clusters.
register() {
  local code
  code=$(api POST /api/v1/clusters "$1")
  case "$code" in
    201|409) ;;
    *) fail "registration answered $code: $(cat "$E2E_WORK/api.json")" ;;
  esac
}
register "{\"name\":\"staging\",\"server_url\":\"$server_url\",\"kubeconfig\":\"$kc\"}"
register "{\"name\":\"production\",\"server_url\":\"$server_url\",\"kubeconfig\":\"$kc\",\"namespaces\":[\"production\"]}"
for ns in staging production; do
  target get namespace "$ns" >/dev/null 2>&1 || target create namespace "$ns" >/dev/null
done

# Step 2: both Apps; staging syncs, production is Held, then approved.
apply_app my-app-staging staging
apply_app my-app-production production
expect_code 0 "$WARDN" apps sync staging/my-app-staging >/dev/null
expect_code 3 "$WARDN" apps sync production/my-app-production >/dev/null
plan_hash() { "$WARDN" apps get "$1" -o json | sed -n 's/^ *"planHash": "\([0-9a-f]*\)".*/\1/p'; }
code=$(api POST /api/v1/apps/production/my-app-production/approve "{\"plan_hash\":\"$(plan_hash production/my-app-production)\"}")
[ "$code" = 200 ] || fail "approve answered $code: $(cat "$E2E_WORK/api.json")"

# The digests the Pods of my-app in namespace $1 run, one per line (Pods being deleted left out).
digests() {
  target get pods -n "$1" -l app=my-app \
    -o jsonpath='{range .items[*]}{.metadata.deletionTimestamp}{"|"}{.status.containerStatuses[*].imageID}{"\n"}{end}' \
    | sed -n 's/^|.*@\(sha256:[0-9a-f]*\)$/\1/p' | sort -u
}
image() { target get deployment my-app -n "$1" -o jsonpath='{.spec.template.spec.containers[0].image}'; }

# Step 3: bump staging's image (the overlay's `kustomize edit set image`), let it sync.
sed -i 's/newTag: "3.9"/newTag: "3.10"/' "$E2E_WORK/src/my-app-staging/kustomization.yaml"
staging=""
for _ in $(seq 240); do
  if [ "$(image staging)" = registry.k8s.io/pause:3.10 ] \
    && output_has '"phase": "Synced"' "$WARDN" apps get staging/my-app-staging -o json; then
    staging=$(digests staging)
    [ -n "$staging" ] && [ "$(echo "$staging" | wc -l)" = 1 ] && break
  fi
  sleep 0.5
done
[ -n "$staging" ] && [ "$(echo "$staging" | wc -l)" = 1 ] \
  || fail "staging did not settle on one digest of pause:3.10: '$staging' ($(image staging))"

# Promote: production is Held with the promotion in its plan; approve; production's Pods
# run exactly staging's digest.
code=$(api POST "/api/v1/apps/staging/my-app-staging/promote?to=my-app-production")
[ "$code" = 200 ] || fail "promote answered $code: $(cat "$E2E_WORK/api.json")"
grep -q '"phase":"Held"' "$E2E_WORK/api.json" || fail "production is not Held: $(cat "$E2E_WORK/api.json")"
grep -q "promotion from staging/my-app-staging at" "$E2E_WORK/api.json" \
  || fail "no promotion in the answer: $(cat "$E2E_WORK/api.json")"
grep -q "registry.k8s.io/pause:3.10 → registry.k8s.io/pause@$staging" "$E2E_WORK/api.json" \
  || fail "the answer does not list pause:3.10 → $staging: $(cat "$E2E_WORK/api.json")"
output_has "^# promotion from staging/my-app-staging" "$WARDN" apps diff production/my-app-production \
  || fail "the plan text does not name the promotion"
expect_code 0 "$WARDN" apps approve production/my-app-production \
  --plan-hash "$(plan_hash production/my-app-production)" >/dev/null
[ "$(image production)" = "registry.k8s.io/pause@$staging" ] \
  || fail "production deploys $(image production), not registry.k8s.io/pause@$staging"
production=""
for _ in $(seq 240); do
  production=$(digests production)
  [ "$production" = "$staging" ] && break
  sleep 0.5
done
[ "$production" = "$staging" ] || fail "production's Pods run '$production', staging's '$staging'"
output_has "$staging" "$WARDN" apps history production/my-app-production \
  || fail "the history does not list $staging: $("$WARDN" apps history production/my-app-production)"

# Troubleshooting: "Cluster shows disconnected" — a connection test names the cause.
stopped=$(printf '%s\n' "$kubeconfig" | sed 's|server: https://[^ ]*|server: https://127.0.0.1:1|' | json_string)
code=$(api POST /api/v1/clusters/test "{\"server_url\":\"https://127.0.0.1:1\",\"kubeconfig\":\"$stopped\"}")
grep -q '"error":"[^"]*refused' "$E2E_WORK/api.json" \
  || fail "a test of a stopped cluster answered $code without the cause: $(cat "$E2E_WORK/api.json")"

# Troubleshooting: "Sync fails with 403 namespace errors".
apply_app my-app-outside production
out=$("$WARDN" apps sync production/my-app-outside 2>&1) && fail "a sync outside the allowlist succeeded: $out"
grep -q 403 <<<"$out" || fail "expected a 403, got: $out"
say "ok"
