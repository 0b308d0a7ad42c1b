#!/usr/bin/env bash
# Runs every e2e/scenarios/*.sh in order against the environment lib.sh describes; stops at
# the first failure.
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
for scenario in "$dir"/scenarios/*.sh; do
  echo "--- $(basename "$scenario")" >&2
  bash "$scenario"
done
echo "all e2e scenarios passed" >&2
