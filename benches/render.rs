//! `make bench`: wardn's renderer against `kubectl kustomize`, whole processes, same machine,
//! same run. Prints wall time and peak RSS of both and the ratios.
//!
//! (a) one overlay of 2,000 objects with namespace, name prefix, labels (with selectors),
//!     100 image overrides and one patch;
//! (b) a monorepo of 200 small overlays, rendered by one `wardn render` process (of a
//!     kustomization listing the 200 overlays) against 200 `kubectl kustomize` processes (one
//!     per overlay).
//!
//! (c) the real-world corpus (`fixtures/real-world/`): per vendored repository, trees
//!     identical / both refuse / differ / wardn-only errors (wardn in-process against the
//!     stored kustomize outputs, as `make test` checks them);
//! (d) the three largest trees of the corpus (by output size), whole processes:
//!     `wardn render TREE` against `kubectl kustomize TREE`.
//!
//! Each process's wall time is taken around it, its CPU time and peak RSS from GNU time.
//! `WARDN_BENCH_QUICK=1` (`make bench`, under a minute): 10 overlays in (b), three wardn
//! runs per measurement and one kustomize run per tree in (d); otherwise 200 overlays, five
//! wardn runs and, in (d), five kustomize runs (the median is printed). Set `KUBECTL` to override
//! the reference binary.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[path = "../tests/support/real_world.rs"]
mod real_world;
mod support;

const DEFAULT_KUBECTL: &str = "/usr/lib/google-cloud-sdk/bin/kubectl.1.32";

/// Wall time, CPU time (user + system) and peak resident set size of a finished child.
/// CPU time is printed too because this machine is shared: wall time swings with the load.
#[derive(Debug, Clone, Copy, Default)]
struct Usage {
    wall: Duration,
    cpu: Duration,
    max_rss_kib: u64,
}

/// GNU time, which reports its child's CPU time and peak RSS (from `wait4`). The child is run
/// through it, not straight from this process: a child forked from this large process would
/// count this process's pages, resident when it forked, in its own peak RSS.
const TIME: &str = "/usr/bin/time";

/// Runs `cmd` to completion (stdout and stderr discarded) under GNU time and returns its
/// figures: wall time taken around it, CPU time and peak RSS as GNU time reports them.
fn measure(cmd: &mut Command) -> Usage {
    let report = tempfile::NamedTempFile::new().expect("temp file");
    let started = Instant::now();
    let status = Command::new(TIME)
        .arg("-f")
        .arg("%U %S %M")
        .arg("-o")
        .arg(report.path())
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run /usr/bin/time");
    let wall = started.elapsed();
    assert!(status.success(), "{cmd:?} failed: {status}");
    let text = fs::read_to_string(report.path()).expect("time report");
    let fields: Vec<f64> = text
        .split_whitespace()
        .filter_map(|f| f.parse().ok())
        .collect();
    let [user, sys, rss] = fields[..] else {
        panic!("unexpected /usr/bin/time output: {text:?}");
    };
    Usage {
        wall,
        cpu: Duration::from_secs_f64(user + sys),
        max_rss_kib: rss as u64,
    }
}

/// The median run of `runs` (by wall time) of `cmd`.
fn median(runs: usize, cmd: &mut Command) -> Usage {
    let mut all: Vec<Usage> = (0..runs.max(1)).map(|_| measure(cmd)).collect();
    all.sort_by_key(|u| u.wall);
    all[all.len() / 2]
}

fn output_of(cmd: &mut Command) -> Vec<u8> {
    let out = cmd.output().expect("run");
    assert!(out.status.success(), "{cmd:?}: {out:?}");
    out.stdout
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    fs::write(path, text).expect("write");
}

fn deployment(name: &str, image: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n  labels:\n    app: {name}\nspec:\n  replicas: 1\n  selector:\n    matchLabels:\n      app: {name}\n  template:\n    metadata:\n      labels:\n        app: {name}\n    spec:\n      containers:\n      - name: main\n        image: {image}\n        env:\n        - name: CONFIG\n          valueFrom:\n            configMapKeyRef:\n              name: {name}-config\n              key: mode\n        ports:\n        - containerPort: 8080\n"
    )
}

fn service(name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: {name}\nspec:\n  selector:\n    app: {name}\n  ports:\n  - port: 80\n    targetPort: 8080\n"
    )
}

fn config_map(name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}-config\ndata:\n  mode: production\n  description: a longer value to give the emitter some real text to write out\n"
    )
}

/// (a): `root/big/base` with 2,000 objects and `root/big/overlay`.
fn generate_big(root: &Path) -> PathBuf {
    let mut base = String::new();
    for i in 0..667 {
        let name = format!("svc{i:04}");
        let image = format!("registry.example.com/team/image{}:1.0", i % 100);
        for doc in [deployment(&name, &image), service(&name), config_map(&name)] {
            base.push_str("---\n");
            base.push_str(&doc);
        }
    }
    base.push_str("---\n");
    base.push_str(&config_map("extra"));
    write(&root.join("big/base/objects.yaml"), &base);
    write(
        &root.join("big/base/kustomization.yaml"),
        "resources:\n- objects.yaml\n",
    );
    let mut overlay = String::from(
        "resources:\n- ../base\nnamespace: production\nnamePrefix: prod-\nlabels:\n- pairs:\n    env: production\n  includeSelectors: true\npatches:\n- target:\n    kind: Deployment\n  patch: |-\n    - op: replace\n      path: /spec/replicas\n      value: 3\nimages:\n",
    );
    for i in 0..100 {
        let _ = write!(
            overlay,
            "- name: registry.example.com/team/image{i}\n  newTag: \"2.{i}\"\n"
        );
    }
    write(&root.join("big/overlay/kustomization.yaml"), &overlay);
    root.join("big/overlay")
}

/// (b): `count` overlays, each over its own small base.
fn generate_monorepo(root: &Path, count: usize) -> Vec<PathBuf> {
    let mut overlays = Vec::new();
    for app in 0..count {
        let dir = root.join(format!("mono/app{app:03}"));
        let name = format!("app{app:03}");
        let base = format!(
            "{}---\n{}---\n{}",
            deployment(&name, "nginx:1.25"),
            service(&name),
            config_map(&name)
        );
        write(&dir.join("base/objects.yaml"), &base);
        write(
            &dir.join("base/kustomization.yaml"),
            "resources:\n- objects.yaml\n",
        );
        write(
            &dir.join("overlays/staging/kustomization.yaml"),
            &format!(
                "resources:\n- ../../base\nnamespace: staging\nnameSuffix: -stg\ncommonLabels:\n  env: staging\nimages:\n- name: nginx\n  newTag: \"1.27\"\nconfigMapGenerator:\n- name: {name}-extra\n  literals:\n  - LEVEL=debug\n"
            ),
        );
        overlays.push(dir.join("overlays/staging"));
    }
    let mut all = String::from("resources:\n");
    for app in 0..count {
        let _ = writeln!(all, "- app{app:03}/overlays/staging");
    }
    write(&root.join("mono/kustomization.yaml"), &all);
    overlays
}

/// The machine's load averages (1, 5 and 15 minutes) from `/proc/loadavg`: the machine is
/// shared, and the figures mean little without it.
fn load() -> String {
    fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

fn report(label: &str, wardn: Usage, kustomize: Usage) {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!("{label} [load {}]", load());
    for (name, u) in [("wardn    ", wardn), ("kustomize", kustomize)] {
        println!(
            "  {name} wall {:>10.1} ms   cpu {:>10.1} ms   peak RSS {:>8.1} MiB",
            ms(u.wall),
            ms(u.cpu),
            u.max_rss_kib as f64 / 1024.0
        );
    }
    println!(
        "  ratio     {:.1}x faster (wall), {:.1}x less CPU, {:.2} of kustomize's peak memory",
        ms(kustomize.wall) / ms(wardn.wall),
        ms(kustomize.cpu) / ms(wardn.cpu).max(0.001),
        wardn.max_rss_kib as f64 / kustomize.max_rss_kib as f64
    );
}

fn main() {
    let kubectl = std::env::var("KUBECTL").unwrap_or_else(|_| DEFAULT_KUBECTL.to_string());
    let wardn = env!("CARGO_BIN_EXE_wardn");
    let quick = support::quick();
    let wardn_runs = if quick { 3 } else { 5 };
    let tmp = tempfile::tempdir().expect("tempdir");
    // A Git work tree marker so `wardn render` roots its tree at the generated repository.
    fs::create_dir_all(tmp.path().join(".git")).expect("mkdir .git");

    let big = generate_big(tmp.path());
    let ours = output_of(Command::new(wardn).arg("render").arg(&big));
    let theirs = output_of(Command::new(&kubectl).arg("kustomize").arg(&big));
    println!(
        "(a) 2,000 objects: outputs identical: {} ({} bytes)",
        if ours == theirs { "yes" } else { "NO" },
        theirs.len()
    );
    let w = median(wardn_runs, Command::new(wardn).arg("render").arg(&big));
    let k = measure(Command::new(&kubectl).arg("kustomize").arg(&big));
    report(
        "(a) one overlay of 2,000 objects (namespace, prefix, labels, 100 images, 1 patch)",
        w,
        k,
    );

    let count = if quick { 10 } else { 200 };
    let overlays = generate_monorepo(tmp.path(), count);
    let w = median(
        wardn_runs,
        Command::new(wardn)
            .arg("render")
            .arg(tmp.path().join("mono")),
    );
    let mut k = Usage::default();
    for overlay in &overlays {
        let one = measure(Command::new(&kubectl).arg("kustomize").arg(overlay));
        k.wall += one.wall;
        k.cpu += one.cpu;
        k.max_rss_kib = k.max_rss_kib.max(one.max_rss_kib);
    }
    let same = overlays.iter().take(5).all(|o| {
        output_of(Command::new(wardn).arg("render").arg(o))
            == output_of(Command::new(&kubectl).arg("kustomize").arg(o))
    });
    println!(
        "(b) first 5 overlays identical: {}",
        if same { "yes" } else { "NO" }
    );
    report(
        &format!(
            "(b) {count} small overlays: one wardn process vs {count} kubectl kustomize processes"
        ),
        w,
        k,
    );

    real_world_corpus(wardn, &kubectl, wardn_runs, if quick { 1 } else { 5 });
}

/// (c) and (d): the corpus table, then the three largest trees, whole processes. Whether
/// wardn's output is kustomize's is known from (c) (the stored outputs and digests were
/// captured from `kubectl kustomize`), so kustomize runs only to be measured.
fn real_world_corpus(wardn: &str, kubectl: &str, wardn_runs: usize, kustomize_runs: usize) {
    println!("(c) real-world corpus (fixtures/real-world), wardn against kustomize's outputs");
    let cases = real_world::cases();
    let mut table = real_world::Table::new();
    let mut sized = Vec::new();
    for case in &cases {
        let (outcome, _, bytes) = real_world::outcome(case);
        *table
            .entry(case.slug.clone())
            .or_default()
            .entry(outcome)
            .or_default() += 1;
        if case.how != "error" {
            sized.push((bytes, outcome, case));
        }
    }
    real_world::print_table(&table);

    sized.sort_by_key(|s| std::cmp::Reverse(s.0));
    for (bytes, outcome, case) in sized.into_iter().take(3) {
        let path = case.root.join(&case.tree);
        let w = median(wardn_runs, Command::new(wardn).arg("render").arg(&path));
        let k = median(
            kustomize_runs,
            Command::new(kubectl).arg("kustomize").arg(&path),
        );
        report(
            &format!(
                "(d) {} {} ({:.1} MB of output; identical to kustomize's: {})",
                case.slug,
                case.tree,
                bytes as f64 / 1e6,
                if outcome == real_world::Outcome::Identical {
                    "yes"
                } else {
                    "NO"
                }
            ),
            w,
            k,
        );
    }
}
