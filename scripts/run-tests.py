#!/usr/bin/env python3
"""Runs every test of the workspace, several test binaries at a time.

`cargo test` runs its test binaries one after another. Most of ours spend their time waiting on
processes they start (kubesim, wardn, PostgreSQL, Chromium, git), so on a 2-core CI machine the
suite took 17 minutes of wall time with the cores mostly idle. This script builds what
`cargo test --workspace` builds, then runs the same binaries `--jobs` at a time (each binary
still runs its own tests in parallel, as under cargo), each in its package's directory as cargo
would, and then the doc tests. Every binary runs even when one fails; the exit status is
non-zero when any failed. Nothing is skipped or filtered: arguments after `--` go to every test
binary (for example `-- --nocapture`).

With `--clippy` the build is also the lint: cargo compiles every target of the workspace
(`--all-targets`: benches too, which are built and not run) through clippy's driver with `-D
warnings`, as `cargo clippy --workspace --all-targets -- -D warnings` would check them, and
fails on any warning. `cargo clippy` only type-checks, so linting and then testing
compiled every dependency twice (checked, then built): on a 2-core CI machine that was 7.5 of
`make test`'s 31 minutes. Every cargo command of the run gets the same environment, so the
doc tests reuse that build.

Usage: scripts/run-tests.py [--jobs N] [--clippy] [-- TEST-ARGS...]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

# Binaries known to take the longest (seconds on a 2-core machine, 2026-12-04): started first so
# that none of them is left running alone at the end. An unknown binary simply starts later.
SLOW_FIRST = [
    "shards",
    "store",
    "roles",
    "wardn",
    "ui_browser",
    "ui_pages",
    "git_timeouts",
    "render_block_yaml",
    "kubesim_clusters",
    "shell",
    "api",
    "declared_clusters",
    "openapi",
    "user_roles",
    "protobuf_kinds",
    "serve_apps",
]


# How `cargo clippy -- -D warnings` hands its arguments to clippy's driver (cargo-clippy's
# `CLIPPY_ARGS`, the arguments joined by this separator).
CLIPPY_DENY_WARNINGS = "-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"


def clippy_variables():
    """The variables under which cargo compiles the workspace's own crates with clippy's lints.

    The wrapper applies to workspace members only, as under `cargo clippy`: dependencies are
    compiled by plain rustc."""
    driver = shutil.which("clippy-driver")
    if driver is None:
        sys.exit("run-tests: --clippy needs clippy-driver on PATH (rustup component add clippy)")
    return {"RUSTC_WORKSPACE_WRAPPER": driver, "CLIPPY_ARGS": CLIPPY_DENY_WARNINGS}


def build(cargo, all_targets):
    """Builds the workspace's test binaries; returns (name, package dir, executable) for each.

    With `all_targets` the benches are built as well (so that the lint sees them); they are not
    returned."""
    command = [cargo, "test", "--workspace", "--no-run", "--message-format=json-render-diagnostics"]
    if all_targets:
        command.append("--all-targets")
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    binaries = []
    for line in process.stdout:
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            continue
        if message.get("reason") != "compiler-artifact" or not message.get("executable"):
            continue
        if not message["profile"]["test"] or "bench" in message["target"].get("kind", []):
            continue
        package_dir = str(Path(message["manifest_path"]).parent)
        binaries.append((message["target"]["name"], package_dir, message["executable"]))
    if process.wait() != 0:
        sys.exit(f"run-tests: `{' '.join(command)}` failed")
    return binaries


def order(binaries):
    """Slow binaries first (in SLOW_FIRST's order), then the rest in cargo's order."""
    rank = {name: index for index, name in enumerate(SLOW_FIRST)}
    return sorted(binaries, key=lambda binary: rank.get(binary[0], len(rank)))


def run_one(binary, test_args):
    """Runs one test binary as `cargo test` would; returns its exit code, output and seconds."""
    name, package_dir, executable = binary
    env = dict(os.environ, CARGO_MANIFEST_DIR=package_dir)
    started = time.monotonic()
    completed = subprocess.run(
        [executable, *test_args],
        cwd=package_dir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
    )
    return completed.returncode, completed.stdout, time.monotonic() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--jobs",
        type=int,
        default=int(os.environ.get("WARDN_TEST_JOBS", "4")),
        help="test binaries run at once (default: $WARDN_TEST_JOBS or 4)",
    )
    parser.add_argument(
        "--clippy",
        action="store_true",
        help="compile through clippy's driver with -D warnings (the lint and the build in one)",
    )
    parser.add_argument("test_args", nargs="*", help="arguments after -- for every test binary")
    args = parser.parse_args()
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    cargo = os.environ.get("CARGO", "cargo")
    if args.clippy:
        os.environ.update(clippy_variables())

    binaries = order(build(cargo, all_targets=args.clippy))
    started = time.monotonic()
    failed = []
    timings = []
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(run_one, binary, args.test_args): binary for binary in binaries}
        for future in as_completed(futures):
            name, package_dir, executable = futures[future]
            code, output, seconds = future.result()
            label = f"{os.path.relpath(package_dir)}: {name} ({os.path.basename(executable)})"
            print(f"     Running {label} [{seconds:.1f} s]", flush=True)
            print(output, end="" if output.endswith("\n") else "\n", flush=True)
            timings.append((seconds, label))
            if code != 0:
                failed.append(label)

    doc = subprocess.run([cargo, "test", "--workspace", "--doc", "--", *args.test_args])
    if doc.returncode != 0:
        failed.append("doc tests")

    print(f"run-tests: {len(binaries)} test binaries, {args.jobs} at a time, "
          f"{time.monotonic() - started:.0f} s; slowest:")
    for seconds, label in sorted(timings, reverse=True)[:8]:
        print(f"  {seconds:7.1f} s  {label}")
    if failed:
        print("run-tests: FAILED: " + ", ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
