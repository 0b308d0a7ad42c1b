//! Shared by the fleet benchmarks: kubesim clusters in a child process (so the benchmark
//! process's memory and CPU figures are wardn's alone), and process CPU / peak RSS readings.
#![allow(dead_code)]

pub mod monorepo;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Set in the child: the directory to write kubeconfigs into.
const CHILD_DIR: &str = "WARDN_BENCH_KUBESIM_DIR";
/// Set in the child: comma-separated cluster names.
const CHILD_CLUSTERS: &str = "WARDN_BENCH_KUBESIM_CLUSTERS";

/// Whether the benchmark runs scaled down (`--quick` or `WARDN_BENCH_QUICK=1`).
pub fn quick() -> bool {
    std::env::args().any(|a| a == "--quick")
        || std::env::var("WARDN_BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// Kubesim clusters served by a child process (this same executable, re-run in child mode).
pub struct Sims {
    child: Child,
    /// Holds the kubeconfigs.
    pub dir: tempfile::TempDir,
    /// `(name, kubeconfig path, server URL)` per cluster.
    pub clusters: Vec<(String, PathBuf, String)>,
}

impl Sims {
    /// Starts `names` in a child process and waits until their kubeconfigs are written.
    pub fn start(names: &[String]) -> Sims {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let exe = std::env::current_exe().unwrap_or_else(|e| panic!("current_exe: {e}"));
        let child = Command::new(exe)
            .env(CHILD_DIR, dir.path())
            .env(CHILD_CLUSTERS, names.join(","))
            .stdin(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawning kubesim child: {e}"));
        let ready = dir.path().join("ready");
        let start = Instant::now();
        while !ready.exists() {
            assert!(
                start.elapsed() < Duration::from_secs(120),
                "kubesim child did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let clusters = names
            .iter()
            .map(|name| {
                let path = dir.path().join(format!("{name}.kubeconfig"));
                let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
                let url = text
                    .lines()
                    .find_map(|l| l.trim().strip_prefix("server: "))
                    .unwrap_or_else(|| panic!("no server in {}", path.display()))
                    .trim()
                    .to_string();
                (name.clone(), path, url)
            })
            .collect();
        Sims {
            child,
            dir,
            clusters,
        }
    }

    /// The child's peak RSS in MiB.
    pub fn peak_rss_mib(&self) -> f64 {
        vm_hwm_mib(&format!("/proc/{}/status", self.child.id()))
    }
}

impl Drop for Sims {
    fn drop(&mut self) {
        // Closing stdin ends the child; kill in case it is stuck.
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// In the child: serves the clusters until stdin closes, then exits. Returns `false` in the
/// parent (call first thing in `main`).
pub fn kubesim_child() -> bool {
    let (Some(dir), Some(names)) = (
        std::env::var_os(CHILD_DIR),
        std::env::var(CHILD_CLUSTERS).ok(),
    ) else {
        return false;
    };
    let dir = PathBuf::from(dir);
    let runtime = tokio::runtime::Runtime::new().unwrap_or_else(|e| panic!("runtime: {e}"));
    runtime.block_on(async {
        kubesim::install_crypto_provider();
        let mut running = Vec::new();
        for name in names.split(',') {
            let cluster = kubesim::Cluster::start(kubesim::ClusterConfig {
                name: name.to_string(),
                namespaces: vec!["bench".into()],
                ready_delay: Duration::ZERO,
                ..Default::default()
            })
            .await
            .unwrap_or_else(|e| panic!("kubesim {name}: {e}"));
            write(
                &dir.join(format!("{name}.kubeconfig")),
                &cluster.kubeconfig(),
            );
            running.push(cluster);
        }
        write(&dir.join("ready"), "");
        // Wait for the parent to close stdin (or exit).
        let _ = tokio::task::spawn_blocking(|| {
            let mut sink = Vec::new();
            let _ = std::io::stdin().read_to_end(&mut sink);
        })
        .await;
        for cluster in &running {
            cluster.stop().await;
        }
    });
    true
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// `VmHWM` (peak resident set) of a `/proc/*/status` file, in MiB.
pub fn vm_hwm_mib(status: &str) -> f64 {
    status_mib(status, "VmHWM:")
}

/// How many sockets process `pid` holds open (its `/proc/PID/fd` entries that are sockets):
/// connections to clusters and databases, and listeners.
pub fn open_sockets(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter_map(|entry| std::fs::read_link(entry.path()).ok())
                .filter(|target| target.to_string_lossy().starts_with("socket:"))
                .count()
        })
        .unwrap_or(0)
}

/// The `field` (e.g. `VmRSS:`) of a `/proc/PID/status` file in MiB (NaN when unreadable).
pub fn status_mib(status: &str, field: &str) -> f64 {
    std::fs::read_to_string(status)
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kib| kib / 1024.0)
}

/// This process's peak RSS in MiB.
pub fn peak_rss_mib() -> f64 {
    vm_hwm_mib("/proc/self/status")
}

/// Clock ticks per second of `/proc/*/stat` times.
fn clock_ticks() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100.0)
}

/// CPU time (user + system, all threads) this process has used, in seconds.
pub fn cpu_seconds() -> f64 {
    let text = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which is in parentheses and may contain spaces).
    let rest = text.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line: 12 and 13 after `) state`.
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / clock_ticks()
}
