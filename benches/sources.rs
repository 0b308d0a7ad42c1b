//! Git sources benchmark (prints figures; `cargo bench --bench sources`).
//!
//! (a) a no-change poll of 100 local repositories and (b) fetching one new commit in each,
//! gix mirrors vs `git fetch` on the same mirrors in the same run; (c) a monorepo of 200 Apps
//! where a commit touches one App: re-renders counted, time from webhook to all Apps handled;
//! (d) RSS growth per cached repository; (e) a Directory source's snapshot of 1,000 files
//! (walked, hashed and checked against the disk) vs `git add -A` + `git write-tree` of the
//! same files into a fresh index.

#[path = "../tests/support/mod.rs"]
mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use support::{Upstream, git};
use wardn::sources::credentials::Credentials;
use wardn::sources::directory::snapshot_directory;
use wardn::sources::git::{GitSettings, Mirror};
use wardn::sources::poller::{Poller, PollerConfig};
use wardn::sources::render_cache::RenderCache;
use wardn::sources::spec::{GitRef, GitSource};
use wardn::sources::url::parse_repo_url;
use wardn::sources::webhook::{WebhookSecrets, handle_request, sign};

const REPOS: usize = 100;
const APPS: usize = 200;

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

fn git_fetch_all(mirrors: &[Mirror], upstreams: &[Upstream]) -> Duration {
    let start = Instant::now();
    for (m, up) in mirrors.iter().zip(upstreams) {
        git(
            m.dir(),
            &[
                "fetch",
                "-q",
                "--prune",
                "--no-tags",
                &up.url(),
                "+refs/heads/*:refs/heads/*",
                "+refs/tags/*:refs/tags/*",
            ],
        );
    }
    start.elapsed()
}

fn gix_fetch_all(mirrors: &[Mirror]) -> (Duration, usize) {
    let start = Instant::now();
    let mut changed = 0;
    for m in mirrors {
        changed += m.fetch().expect("fetch").changes.len();
    }
    (start.elapsed(), changed)
}

fn commit_everywhere(upstreams: &[Upstream], round: &str) {
    for up in upstreams {
        up.commit(&[("app/cm.yaml", &format!("round: {round}\n"))], round);
    }
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64()
}

fn bench_polls(root: &Path) {
    let upstreams: Vec<Upstream> = (0..REPOS)
        .map(|i| {
            let up = Upstream::init(&root.join(format!("up/{i:03}")));
            up.commit(
                &[("app/cm.yaml", "round: 0\n"), ("README.md", "r\n")],
                "initial",
            );
            up
        })
        .collect();
    let settings = GitSettings {
        data_dir: root.join("data"),
        extra_roots_pem: None,
        ..GitSettings::default()
    };
    let rss_before = rss_kib();
    let mirrors: Vec<Mirror> = upstreams
        .iter()
        .map(|up| {
            Mirror::open(
                &settings,
                parse_repo_url(&up.url()).unwrap(),
                Credentials::Anonymous,
            )
            .unwrap()
        })
        .collect();
    let (initial, _) = gix_fetch_all(&mirrors);
    let rss_after = rss_kib();
    println!(
        "initial fetch of {REPOS} repositories (gix): {:.3} s",
        initial.as_secs_f64()
    );

    // (a) no-change polls, several rounds each, alternating tools.
    let (mut gix_nc, mut git_nc) = (Duration::ZERO, Duration::ZERO);
    for _ in 0..3 {
        let (d, changed) = gix_fetch_all(&mirrors);
        assert_eq!(changed, 0);
        gix_nc += d;
        git_nc += git_fetch_all(&mirrors, &upstreams);
    }
    println!(
        "(a) no-change poll of {REPOS} repos: gix {:.1} ms, git fetch {:.1} ms per round, ratio gix/git = {:.2}x",
        gix_nc.as_secs_f64() * 1000.0 / 3.0,
        git_nc.as_secs_f64() * 1000.0 / 3.0,
        ratio(gix_nc, git_nc)
    );

    // (b) one new commit in each repository.
    let (mut gix_new, mut git_new) = (Duration::ZERO, Duration::ZERO);
    for round in 1..=2 {
        commit_everywhere(&upstreams, &format!("gix-{round}"));
        let (d, changed) = gix_fetch_all(&mirrors);
        assert_eq!(changed, REPOS);
        gix_new += d;
        commit_everywhere(&upstreams, &format!("git-{round}"));
        git_new += git_fetch_all(&mirrors, &upstreams);
    }
    println!(
        "(b) fetch one new commit in each of {REPOS} repos: gix {:.1} ms, git fetch {:.1} ms per round, ratio gix/git = {:.2}x",
        gix_new.as_secs_f64() * 1000.0 / 2.0,
        git_new.as_secs_f64() * 1000.0 / 2.0,
        ratio(gix_new, git_new)
    );
    println!(
        "(d) RSS growth per cached repository (open + fetched mirror handle): {:.1} KiB ({} KiB for {REPOS})",
        rss_after.saturating_sub(rss_before) as f64 / REPOS as f64,
        rss_after.saturating_sub(rss_before)
    );
}

fn bench_monorepo(root: &Path) {
    let up = Upstream::init(&root.join("mono"));
    let mut files = Vec::new();
    for i in 0..APPS {
        files.push((
            format!("apps/app-{i:03}/kustomization.yaml"),
            "resources: [cm.yaml]\ncommonLabels: {team: x}\n".to_string(),
        ));
        files.push((
            format!("apps/app-{i:03}/cm.yaml"),
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-{i:03}\ndata:\n  v: \"1\"\n"),
        ));
    }
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    up.commit(&refs, "200 apps");

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut config = PollerConfig::new(GitSettings {
            data_dir: root.join("mono-data"),
            extra_roots_pem: None,
            ..GitSettings::default()
        });
        config.backoff_base = Duration::from_secs(3600);
        let (poller, mut rx) = Poller::new(config);
        let source = GitSource {
            url: parse_repo_url(&up.url()).unwrap(),
            reference: GitRef::Branch("main".into()),
            path: String::new(),
            interval: Duration::from_secs(3600),
        };
        let key = source.url.key.clone();
        let cache = Arc::new(RenderCache::new());
        for i in 0..APPS {
            poller
                .subscribe(&format!("app-{i:03}"), &source, Credentials::Anonymous)
                .await
                .unwrap();
        }
        // Initial render of every App.
        let mut seen = 0;
        let start = Instant::now();
        while seen < APPS {
            let u = rx.recv().await.unwrap();
            if let Some(snap) = u.snapshot {
                let dir = format!("apps/{}", u.app);
                cache.render(&u.app, &key, snap.tree.as_ref(), &dir).unwrap();
                seen += 1;
            }
        }
        println!(
            "(c) initial render of {APPS} Apps: {:.1} ms",
            start.elapsed().as_secs_f64() * 1000.0
        );

        up.commit(
            &[(
                "apps/app-042/cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-042\ndata:\n  v: \"2\"\n",
            )],
            "touch one app",
        );
        let secrets = WebhookSecrets::new(Some("s"));
        let body = serde_json::json!({"repository": {"clone_url": up.url()}}).to_string();
        let mut headers = axum::http::HeaderMap::new();
        headers.insert(
            "x-hub-signature-256",
            sign(b"s", body.as_bytes()).parse().unwrap(),
        );
        let start = Instant::now();
        let outcome = handle_request(&poller, &secrets, &headers, body.as_bytes())
            .await
            .unwrap();
        assert!(matches!(
            outcome,
            wardn::sources::webhook::WebhookOutcome::Triggered { .. }
        ));
        let (mut handled, mut rerendered) = (0, 0);
        let mut first_rendered = None;
        while handled < APPS {
            let u = rx.recv().await.unwrap();
            if let Some(snap) = u.snapshot {
                let dir = format!("apps/{}", u.app);
                let r = cache.render(&u.app, &key, snap.tree.as_ref(), &dir).unwrap();
                if !r.reused {
                    rerendered += 1;
                    first_rendered.get_or_insert(start.elapsed());
                }
                handled += 1;
            }
        }
        let all = start.elapsed();
        println!(
            "(c) commit touching 1 of {APPS} Apps: {rerendered} re-rendered; webhook → touched App rendered {:.1} ms, → all {APPS} Apps checked {:.1} ms",
            first_rendered.unwrap_or_default().as_secs_f64() * 1000.0,
            all.as_secs_f64() * 1000.0
        );
        assert_eq!(rerendered, 1);
        let _ = poller.stats(&key);
    });
}

/// (e): the mean time of a Directory snapshot of 50 directories of 20 files, and of git
/// hashing the same files into a fresh index (git's stat cache left out, as the snapshot has
/// none), over `ROUNDS` rounds each.
fn bench_directory(root: &Path) {
    const ROUNDS: u32 = 20;
    let dir = root.join("directory-source");
    for d in 0..50 {
        let sub = dir.join(format!("app-{d}"));
        std::fs::create_dir_all(&sub).unwrap();
        let mut resources = String::from("resources:\n");
        for f in 0..19 {
            std::fs::write(
                sub.join(format!("cm-{f}.yaml")),
                format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{d}-{f}\ndata:\n  key: value-{f}\n"),
            )
            .unwrap();
            resources.push_str(&format!("- cm-{f}.yaml\n"));
        }
        std::fs::write(sub.join("kustomization.yaml"), resources).unwrap();
    }
    git(&dir, &["init", "-q"]);
    let start = Instant::now();
    let mut revision = String::new();
    for _ in 0..ROUNDS {
        revision = snapshot_directory(&dir).unwrap().revision;
    }
    let snapshot = start.elapsed() / ROUNDS;
    let index = root.join("directory-source.index");
    let start = Instant::now();
    for _ in 0..ROUNDS {
        let _ = std::fs::remove_file(&index);
        let status = std::process::Command::new("sh")
            .arg("-c")
            .arg("git add -A && git write-tree >/dev/null")
            .current_dir(&dir)
            .env("GIT_INDEX_FILE", &index)
            .status()
            .unwrap();
        assert!(status.success());
    }
    let git_hash = start.elapsed() / ROUNDS;
    println!(
        "(e) Directory snapshot of 1,000 files: {:.1} ms ({revision}); git add -A + write-tree into a fresh index: {:.1} ms (ratio {:.2})",
        snapshot.as_secs_f64() * 1000.0,
        git_hash.as_secs_f64() * 1000.0,
        ratio(snapshot, git_hash)
    );
}

fn main() {
    let root = tempfile::tempdir().unwrap();
    println!(
        "wardn sources benchmark ({} cores)",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    bench_polls(root.path());
    bench_monorepo(root.path());
    bench_directory(root.path());
}
