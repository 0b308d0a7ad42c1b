#!/usr/bin/env bash
# Re-captures the expected output of every render corpus case from the reference,
# `kubectl kustomize` (kubectl 1.32, kustomize v5.5.0).
#
# Usage: scripts/capture-render-fixtures.sh [CASE...]     (default: every case)
#
# Layout of a case, fixtures/render/<case>/:
#   the input tree; the directory rendered is the case directory itself, or the path in
#   the optional file `target` (relative to the case);
#   `plain`             marks a directory without a kustomization: the reference is captured
#                       from a temporary copy with a kustomization listing its *.yaml, *.yml
#                       and *.json files in lexical order with sortOptions fifo;
#   `expected.yaml`     the captured stdout (written by this script);
#   `expected-error.txt` for cases where kustomize fails: the key phrase wardn's error must
#                       contain (hand-written; this script only checks that kustomize fails).
set -euo pipefail
KUBECTL=${KUBECTL:-/usr/lib/google-cloud-sdk/bin/kubectl.1.32}
root=$(cd "$(dirname "$0")/.." && pwd)/fixtures/render
cases=("$@")
if [ ${#cases[@]} -eq 0 ]; then
  mapfile -t cases < <(ls "$root")
fi
for case in "${cases[@]}"; do
  dir="$root/$case"
  target=.
  [ -f "$dir/target" ] && target=$(tr -d '\n' < "$dir/target")
  if [ -f "$dir/expected-error.txt" ]; then
    if "$KUBECTL" kustomize "$dir/$target" >/dev/null 2>&1; then
      echo "WARNING $case: kustomize succeeds but the case expects an error" >&2
    fi
    continue
  fi
  if [ -f "$dir/plain" ]; then
    tmp=$(mktemp -d)
    cp -r "$dir/$target/." "$tmp/"
    files=$(cd "$tmp" && LC_ALL=C ls -1 | grep -E '\.(yaml|yml|json)$' | sed 's/^/- /')
    printf 'sortOptions: {order: fifo}\nresources:\n%s\n' "$files" > "$tmp/kustomization.yaml"
    "$KUBECTL" kustomize "$tmp" > "$dir/expected.yaml"
    rm -rf "$tmp"
  else
    if ! "$KUBECTL" kustomize "$dir/$target" > "$dir/expected.yaml.tmp" 2>/dev/null; then
      echo "FAILED $case: kustomize errors (make it an expected-error case?)" >&2
      rm -f "$dir/expected.yaml.tmp"
      continue
    fi
    mv "$dir/expected.yaml.tmp" "$dir/expected.yaml"
  fi
  echo "captured $case"
done
