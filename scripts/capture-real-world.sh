#!/usr/bin/env bash
# Vendors the real-world kustomize corpus and re-captures its expectations from the reference,
# `kubectl kustomize` (kubectl 1.32, kustomize v5.5.0).
#
# Usage: scripts/capture-real-world.sh [REPO...]        (default: every repository in PINS)
#
# fixtures/real-world/PINS lists `owner/name commit tree-glob...`: the pinned commit and the
# kustomization directories to test (shell globs over directories holding a kustomization).
# For each repository the script checks out the pinned commit (from $MIRRORS/owner+name/repo
# when that bare mirror exists, else a blobless clone from GitHub), runs kustomize on every
# tree under strace to learn which files it reads, copies only those files to
# fixtures/real-world/<owner>+<name>/, and renders every tree again from the vendored copy to
# write fixtures/real-world/<owner>+<name>.tsv: one line per tree,
#   <tree> TAB yaml   TAB <file under fixtures/real-world/expected/>   (kustomize's output)
#   <tree> TAB sha256 TAB <sha256 of kustomize's output>              (outputs over 64 KiB)
#   <tree> TAB error  TAB <kustomize's error, first line>             (kustomize refuses)
# tests/render_real_world.rs renders every tree with wardn and compares.
set -euo pipefail
KUBECTL=${KUBECTL:-/usr/lib/google-cloud-sdk/bin/kubectl.1.32}
MIRRORS=${MIRRORS:-/work/.mirror}
LARGE=65536
here=$(cd "$(dirname "$0")/.." && pwd)
out=$here/fixtures/real-world
mkdir -p "$out/expected"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

want=("$@")
while read -r repo commit globs; do
  [ -z "$repo" ] || [ "${repo:0:1}" = "#" ] && continue
  if [ ${#want[@]} -gt 0 ] && [[ ! " ${want[*]} " =~ " $repo " ]]; then continue; fi
  slug=${repo/\//+}
  src=$work/$slug
  mkdir -p "$src"
  if [ -d "$MIRRORS/$slug/repo" ]; then
    git_dir=$MIRRORS/$slug/repo
  else
    git clone -q --bare --filter=blob:none "https://github.com/$repo.git" "$work/$slug.git"
    git_dir=$work/$slug.git
  fi
  # Export only the kustomization-bearing part of the tree: directories named by the globs'
  # first path component (blobs of other files, such as images, are never fetched).
  tops=$(for g in $globs; do echo "${g%%/*}"; done | sort -u)
  # shellcheck disable=SC2086
  git --git-dir "$git_dir" archive "$commit" $tops | tar -x -C "$src"

  trees=()
  for g in $globs; do
    while IFS= read -r f; do trees+=("$(dirname "$f")"); done < <(
      cd "$src" && find $g -maxdepth 0 -type d 2>/dev/null | while read -r d; do
        for k in kustomization.yaml kustomization.yml Kustomization; do
          [ -f "$d/$k" ] && echo "$d/$k"
        done
      done)
  done
  mapfile -t trees < <(printf '%s\n' "${trees[@]}" | sort -u)

  # Files kustomize reads, learnt by tracing it on the full checkout.
  : > "$work/files"
  for t in "${trees[@]}"; do
    (cd "$src" && strace -f -qq -e trace=openat -o "$work/trace" \
      "$KUBECTL" kustomize "$t" >/dev/null 2>&1 || true)
    grep -v ENOENT "$work/trace" | grep -o "\"$src/[^\"]*\"" | tr -d '"' |
      sed "s#^$src/##" >> "$work/files" || true
  done
  rm -rf "${out:?}/$slug"
  mkdir -p "$out/$slug"
  sort -u "$work/files" | while IFS= read -r f; do
    [ -f "$src/$f" ] || [ -L "$src/$f" ] || continue
    mkdir -p "$out/$slug/$(dirname "$f")"
    cp -P "$src/$f" "$out/$slug/$f"
  done

  # Expectations, captured from the vendored copy (so it is known to be complete).
  index=$out/$slug.tsv
  : > "$index"
  rm -f "$out/expected/$slug"__*
  for t in "${trees[@]}"; do
    name=${slug}__$(echo "$t" | tr "/" "_").yaml
    if (cd "$out/$slug" && "$KUBECTL" kustomize "$t" > "$work/out" 2> "$work/err"); then
      if [ "$(stat -c %s "$work/out")" -gt $LARGE ]; then
        printf '%s\tsha256\t%s\n' "$t" "$(sha256sum < "$work/out" | cut -d' ' -f1)" >> "$index"
      else
        cp "$work/out" "$out/expected/$name"
        printf '%s\tyaml\t%s\n' "$t" "$name" >> "$index"
      fi
    else
      msg=$(grep -v '^# Warning' "$work/err" | head -1 | sed "s#$out/$slug/##g" | tr '\t' ' ')
      printf '%s\terror\t%s\n' "$t" "$msg" >> "$index"
    fi
  done
  echo "$repo: ${#trees[@]} trees, $(find "$out/$slug" -type f | wc -l) files, $(du -sh "$out/$slug" | cut -f1)"
done < "$out/PINS"
