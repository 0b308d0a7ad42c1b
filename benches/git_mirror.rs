//! Git mirror health benchmark (prints figures; `cargo bench --bench git_mirror`).
//!
//! One repository, one commit at a time, each fetched into wardn's mirror: the fetch time at
//! fetch 1, 100 and the last one (1,000 with `WARDN_BENCH_QUICK=1` / `--quick`, 10,000
//! otherwise), the median of the 20 fetches around each point, the slowest fetch (a fetch
//! that consolidates the packs first) and the pack count. Flat figures mean the mirror stays
//! healthy however many fetches it has seen.

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use support::Upstream;
use wardn::sources::credentials::Credentials;
use wardn::sources::git::{GitSettings, Mirror};
use wardn::sources::spec::GitRef;
use wardn::sources::url::parse_repo_url;

fn quick() -> bool {
    std::env::args().any(|a| a == "--quick")
        || std::env::var("WARDN_BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0")
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The median of the fetch times around fetch `at` (1-based), at most 20 of them.
fn median_around(times: &[Duration], at: usize) -> Duration {
    let start = at.saturating_sub(10).max(1) - 1;
    let end = (start + 20).min(times.len());
    let mut window: Vec<Duration> = times[start..end].to_vec();
    window.sort();
    window[window.len() / 2]
}

fn main() {
    let fetches: usize = if quick() { 1_000 } else { 10_000 };
    let root = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    println!(
        "wardn git mirror benchmark: {fetches} commits, each fetched ({} cores)",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    let up = Upstream::init(&root.path().join("up"));
    for i in 0..20 {
        up.commit(
            &[(format!("apps/app{i}/cm.yaml").as_str(), "round: 0\n")],
            "seed",
        );
    }
    let settings = GitSettings {
        data_dir: root.path().join("data"),
        extra_roots_pem: None,
        ..GitSettings::default()
    };
    let url = parse_repo_url(&up.url()).unwrap_or_else(|e| panic!("{e}"));
    let mirror = Mirror::open(&settings, url, Credentials::Anonymous)
        .unwrap_or_else(|e| panic!("open: {e}"));
    let main = GitRef::Branch("main".into());
    let mut times = Vec::with_capacity(fetches);
    let mut packs = Vec::with_capacity(fetches);
    let mut repacks = 0;
    let mut previous_packs = 0;
    let total = Instant::now();
    for i in 1..=fetches {
        let content = format!("round: {i}\n");
        let path = format!("apps/app{}/cm.yaml", i % 20);
        let commit = up.commit(&[(path.as_str(), content.as_str())], &format!("round {i}"));
        let start = Instant::now();
        mirror
            .fetch()
            .unwrap_or_else(|e| panic!("fetch {i} failed: {e}"));
        times.push(start.elapsed());
        let id = mirror
            .resolve(&main)
            .unwrap_or_else(|e| panic!("resolve {i}: {e}"));
        assert_eq!(id.to_string(), commit, "fetch {i}");
        let count = mirror.pack_count().unwrap_or_else(|e| panic!("{e}"));
        if count < previous_packs {
            repacks += 1;
        }
        previous_packs = count;
        packs.push(count);
    }
    let elapsed = total.elapsed();
    for at in [1, 100, fetches] {
        println!(
            "  fetch {at:>6}: {:7.2} ms   (median of the 20 around it {:6.2} ms)   packs {}",
            ms(times[at - 1]),
            ms(median_around(&times, at)),
            packs[at - 1]
        );
    }
    let (slowest_at, slowest) = times
        .iter()
        .enumerate()
        .max_by_key(|(_, t)| **t)
        .map(|(i, t)| (i + 1, *t))
        .unwrap_or((0, Duration::ZERO));
    let mean = times.iter().sum::<Duration>() / u32::try_from(fetches).unwrap_or(u32::MAX);
    println!(
        "  mean fetch {:.2} ms, slowest {:.2} ms (fetch {slowest_at}); {repacks} repacks, at most {} packs, {} slots; {:.1} s in all (commits included)",
        ms(mean),
        ms(slowest),
        packs.iter().max().copied().unwrap_or(0),
        mirror.slots(),
        elapsed.as_secs_f64()
    );
}
