#!/usr/bin/env bash
# `make run`: the wardn daemon with its embedded defaults, on this machine only.
#   - three kubesim clusters (mgmt, staging, production) on 127.0.0.1, kubeconfigs in DATA/kubesim
#   - a local Git repository with the demo overlays (fixtures/demo-app) in DATA/demo-repo
#   - wardn serve on 127.0.0.1:8080 with SQLite in DATA/wardn.db, staging and production registered
# Stops everything it started on Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=$(mkdir -p "${1:-.data}" && cd "${1:-.data}" && pwd)
BIN="${CARGO_TARGET_DIR:-target}/debug"
LISTEN="${WARDN_LISTEN:-127.0.0.1:8080}"
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM

# A local credentials key, generated once. Production reads WARDN_CREDENTIALS_KEY from a Secret.
if [ -z "${WARDN_CREDENTIALS_KEY:-}" ]; then
  keyfile="$DATA/credentials.key"
  [ -f "$keyfile" ] || (umask 077 && head -c 32 /dev/urandom | base64 > "$keyfile")
  echo "warning: WARDN_CREDENTIALS_KEY is not set; using the local key in $keyfile (fine for a demo, not for production)" >&2
  WARDN_CREDENTIALS_KEY=$(cat "$keyfile")
  export WARDN_CREDENTIALS_KEY
fi
# The admin password, generated once and kept next to the data so the demo can log in again.
pwfile="$DATA/admin.password"
[ -f "$pwfile" ] || (umask 077 && head -c 18 /dev/urandom | base64 > "$pwfile")
export WARDN_ADMIN_PASSWORD="${WARDN_ADMIN_PASSWORD:-$(cat "$pwfile")}"
export WARDN_WEBHOOK_SECRET="${WARDN_WEBHOOK_SECRET:-local-demo-secret}"

# Clusters.
rm -f "$DATA"/kubesim/*.kubeconfig
"$BIN/kubesim" serve --clusters mgmt,staging,production --dir "$DATA/kubesim" \
  --namespaces staging,production --nodes 3 &
pids+=($!)
for _ in $(seq 100); do [ -f "$DATA/kubesim/production.kubeconfig" ] && break; sleep 0.1; done

# The App CRD in the management cluster, so App resources can be applied there too
# (`kubectl --kubeconfig $DATA/kubesim/mgmt.kubeconfig apply -f my-app.yaml`).
if command -v kubectl >/dev/null; then
  for _ in $(seq 100); do [ -f "$DATA/kubesim/mgmt.kubeconfig" ] && break; sleep 0.1; done
  "$BIN/wardn" crd | kubectl --kubeconfig "$DATA/kubesim/mgmt.kubeconfig" apply -f - >/dev/null \
    || echo "warning: could not install the App CRD in the mgmt cluster" >&2
else
  echo "note: no kubectl on PATH: the App CRD is not installed in the mgmt cluster (wardn crd | kubectl apply -f -)" >&2
fi

# The fixture Git repository (made with the git CLI, once).
repo="$DATA/demo-repo"
if [ ! -d "$repo/.git" ]; then
  mkdir -p "$repo" && cp -r fixtures/demo-app/. "$repo/"
  git -C "$repo" init -q -b main
  git -C "$repo" -c user.name=wardn -c user.email=wardn@localhost add -A
  git -C "$repo" -c user.name=wardn -c user.email=wardn@localhost commit -q -m "demo app"
fi
mkdir -p "$DATA/apps"
for f in fixtures/demo-apps/*.yaml; do sed "s|REPO|file://$repo|" "$f" > "$DATA/apps/$(basename "$f")"; done

"$BIN/wardn" serve --listen "$LISTEN" --data-dir "$DATA" \
  --apps "$DATA/apps" --kubeconfig "$DATA/kubesim/mgmt.kubeconfig" &
pids+=($!)
for _ in $(seq 100); do curl -fs "http://$LISTEN/api/v1/health" >/dev/null && break; sleep 0.1; done

# Register staging and production. On a second run (an existing DATA) they are registered
# already, but kubesim listens on new ports with a new CA: update them to the new kubeconfigs.
WARDN_PASSWORD="$WARDN_ADMIN_PASSWORD" "$BIN/wardn" login --server "http://$LISTEN" >/dev/null
cookies="$DATA/cookies.txt"
curl -fs -c "$cookies" -H 'Content-Type: application/json' \
  -d "{\"username\":\"admin\",\"password\":\"$WARDN_ADMIN_PASSWORD\"}" "http://$LISTEN/api/v1/auth/login" >/dev/null
for name in staging production; do
  kubeconfig="$DATA/kubesim/$name.kubeconfig"
  url=$(sed -n 's/^ *server: *//p' "$kubeconfig" | head -n 1)
  body=$(jq -n --arg name "$name" --arg url "$url" --rawfile kc "$kubeconfig" \
    '{name: $name, server_url: $url, kubeconfig: $kc, namespaces: [$name]}')
  code=$(curl -s -o /dev/null -w '%{http_code}' -b "$cookies" -H 'Content-Type: application/json' \
    -d "$body" "http://$LISTEN/api/v1/clusters")
  if [ "$code" = 409 ]; then
    code=$(curl -s -o /dev/null -w '%{http_code}' -b "$cookies" -X PUT -H 'Content-Type: application/json' \
      -d "$body" "http://$LISTEN/api/v1/clusters/$name")
  fi
  case "$code" in 2??) ;; *) echo "registering cluster $name failed: HTTP $code" >&2; exit 1 ;; esac
done

# The Apps were first tried before their clusters existed: sync them once now.
for app in staging/demo-staging production/demo-production; do
  curl -fs -b "$cookies" -X POST -H 'Content-Type: application/json' "http://$LISTEN/api/v1/apps/$app/sync" >/dev/null || true
done

cat <<MSG

wardn is running on http://$LISTEN   (user admin, password in $pwfile)
  clusters:   $BIN/wardn clusters list --server http://$LISTEN
  kubectl:    kubectl --kubeconfig $DATA/kubesim/staging.kubeconfig get all -A
  App CRD:    kubectl --kubeconfig $DATA/kubesim/mgmt.kubeconfig get apps -A   (installed in mgmt)
  apps:       curl -s -c $DATA/cookies.txt -H 'Content-Type: application/json' -d "{\"username\":\"admin\",\"password\":\"\$(cat $pwfile)\"}" http://$LISTEN/api/v1/auth/login
              curl -s -b $DATA/cookies.txt http://$LISTEN/api/v1/apps | jq .
  approve:    WARDN_PASSWORD=\$(cat $pwfile) $BIN/wardn login --server http://$LISTEN
              $BIN/wardn apps approve production/demo-production    (production is Held until approved)
  promote:    $BIN/wardn apps promote staging/demo-staging --to demo-production
              (pins the image digests staging runs on production; Held, then approve as above)
  history:    $BIN/wardn apps history production/demo-production
  demo repo:  $repo (Apps in $DATA/apps; commit there, then wait for the poll or send a webhook)
Ctrl-C stops everything.
MSG
wait
