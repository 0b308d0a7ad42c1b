//! Git remotes that stop answering: every network transport gives up after the mirror's
//! timeout (`--git-timeout`) of silence instead of holding the repository's poll forever.
//! Remotes are the real `git daemon` and `git http-backend` (over HTTPS), a listener that
//! accepts and never answers, and a TCP proxy that passes a remote's first bytes and then
//! stalls in the middle of a fetch; `ssh` is the system's OpenSSH client.

mod support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use support::https_git::{Auth, HttpsGitServer};
use support::{Upstream, git};
use wardn::sources::credentials::Credentials;
use wardn::sources::git::{GitError, GitSettings, Mirror};
use wardn::sources::spec::GitRef;
use wardn::sources::transport::SSH_ENDED;
use wardn::sources::url::parse_repo_url;

/// How long a test waits for a fetch: far longer than any fetch here takes (whole ones
/// included), and shorter than the limits of the libraries underneath (reqwest's 30 s, gix's
/// 20 s to connect), so a fetch that ignores its mirror's timeout fails the wait.
const LONGEST: Duration = Duration::from_secs(15);

fn mirror(data: &Path, url: &str, timeout: Duration, ca_pem: Option<&str>) -> Mirror {
    let settings = GitSettings {
        data_dir: data.to_path_buf(),
        extra_roots_pem: ca_pem.map(|pem| Arc::new(pem.as_bytes().to_vec())),
        timeout,
    };
    Mirror::open(
        &settings,
        parse_repo_url(url).unwrap(),
        Credentials::Anonymous,
    )
    .unwrap()
}

/// Fetches on another thread and returns the result, failing the test if the fetch has not
/// returned after [`LONGEST`].
fn fetch_within_limit(mirror: &Arc<Mirror>) -> Result<(), GitError> {
    let (tx, rx) = std::sync::mpsc::channel();
    let job = Arc::clone(mirror);
    std::thread::spawn(move || {
        let _ = tx.send(job.fetch().map(|_| ()));
    });
    rx.recv_timeout(LONGEST)
        .unwrap_or_else(|_| panic!("the fetch of {mirror:?} was still waiting after {LONGEST:?}"))
}

/// A bare repository `repo.git` under `root` with one commit on `main`.
fn served_repo(root: &Path, work: &Path) -> Upstream {
    let upstream = Upstream::init(work);
    for i in 0..20 {
        // Enough content that a pack spans many reads.
        let body: String = (0..400).map(|n| format!("line {i}-{n}\n")).collect();
        upstream.commit(&[(&format!("app/file{i}.txt"), &body)], &format!("c{i}"));
    }
    upstream.push_to_bare(root, "repo.git");
    upstream
}

/// The real `git daemon` serving `root` on a free port of 127.0.0.1.
struct GitDaemon {
    child: Child,
    port: u16,
}

impl GitDaemon {
    fn start(root: &Path) -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("git")
            .args([
                "daemon",
                "--export-all",
                "--reuseaddr",
                "--listen=127.0.0.1",
                &format!("--port={port}"),
                &format!("--base-path={}", root.display()),
                root.to_str().unwrap(),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("git daemon starts");
        let daemon = Self { child, port };
        for _ in 0..200 {
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return daemon;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("git daemon did not listen on {port}");
    }

    fn url(&self, name: &str) -> String {
        format!("git://127.0.0.1:{}/{name}", self.port)
    }
}

impl Drop for GitDaemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Accepts connections and never answers (nor closes them until dropped).
struct Silent {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
}

impl Silent {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut held = Vec::new();
            while !flag.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((socket, _)) => held.push(socket),
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        Self { addr, stop }
    }
}

impl Drop for Silent {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// A TCP proxy to `upstream` that passes everything the client sends, and the remote's
/// answers until `budget` bytes of them have passed (over all connections); then it stops
/// passing anything on, holding the connections open: a remote that stalls mid-fetch.
struct StallingProxy {
    addr: SocketAddr,
    /// Bytes of the remote's answers passed on so far.
    passed: Arc<AtomicUsize>,
    /// The most bytes of answers passed on; `usize::MAX` passes everything.
    budget: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl StallingProxy {
    fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let passed = Arc::new(AtomicUsize::new(0));
        let budget = Arc::new(AtomicUsize::new(usize::MAX));
        let stop = Arc::new(AtomicBool::new(false));
        let (passed_c, budget_c, stop_c) = (passed.clone(), budget.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop_c.load(Ordering::SeqCst) {
                let Ok((client, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                };
                client.set_nonblocking(false).unwrap();
                let Ok(remote) = TcpStream::connect(upstream) else {
                    continue;
                };
                let client_gone = Arc::new(AtomicBool::new(false));
                let (mut c_read, mut r_write) =
                    (client.try_clone().unwrap(), remote.try_clone().unwrap());
                let gone = Arc::clone(&client_gone);
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut c_read, &mut r_write);
                    let _ = r_write.shutdown(std::net::Shutdown::Write);
                    gone.store(true, Ordering::SeqCst);
                });
                let (mut r_read, mut c_write) = (remote, client);
                let (passed, budget, stop) = (passed_c.clone(), budget_c.clone(), stop_c.clone());
                std::thread::spawn(move || {
                    let mut buf = [0u8; 1024];
                    loop {
                        let Ok(n) = r_read.read(&mut buf) else { return };
                        if n == 0 {
                            return;
                        }
                        let allowed = budget
                            .load(Ordering::SeqCst)
                            .saturating_sub(passed.load(Ordering::SeqCst))
                            .min(n);
                        if allowed > 0 && c_write.write_all(&buf[..allowed]).is_err() {
                            return;
                        }
                        passed.fetch_add(allowed, Ordering::SeqCst);
                        if allowed < n {
                            // Stalled: hold both ends open until the client gives up.
                            while !stop.load(Ordering::SeqCst)
                                && !client_gone.load(Ordering::SeqCst)
                            {
                                std::thread::sleep(Duration::from_millis(10));
                            }
                            let _ = c_write.shutdown(std::net::Shutdown::Both);
                            let _ = r_read.shutdown(std::net::Shutdown::Both);
                            return;
                        }
                    }
                });
            }
        });
        Self {
            addr,
            passed,
            budget,
            stop,
        }
    }
}

impl Drop for StallingProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Open file descriptors of this process.
fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// Files under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Differential and long-run: `git://` remotes, connected by wardn itself (to bound the
/// socket's silence), fetch from the real `git daemon` exactly what `git ls-remote` sees, and
/// follow forty pushes in a row.
#[test]
fn git_daemon_remotes_fetch_what_git_ls_remote_sees() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("srv");
    let upstream = served_repo(&root, &tmp.path().join("work"));
    let daemon = GitDaemon::start(&root);
    let url = daemon.url("repo.git");
    let m = Arc::new(mirror(
        &tmp.path().join("data"),
        &url,
        Duration::from_secs(30),
        None,
    ));
    // Forty pushes, each fetched: past the mirror's pack limit (its packs are consolidated)
    // and the 33rd fetch alike.
    for round in 0..40 {
        if round > 0 {
            upstream.commit(&[("app/new.txt", &format!("round {round}\n"))], "new");
            upstream.push_to_bare(&root, "repo.git");
        }
        fetch_within_limit(&m).unwrap();
        let seen = git(tmp.path(), &["ls-remote", &url, "refs/heads/main"]);
        let expected = seen.split_whitespace().next().unwrap().to_string();
        let resolved = m.resolve(&GitRef::Branch("main".into())).unwrap();
        assert_eq!(resolved.to_string(), expected, "round {round}");
        assert_eq!(expected, upstream.head());
    }
}

/// Hostile: a remote that accepts the connection and never answers. Over https, http,
/// git:// and ssh alike the fetch gives up after the timeout, as an unreachable remote whose
/// message says it timed out (or, over ssh, that the ssh command ended: [`SSH_ENDED`]).
#[test]
fn silent_remotes_are_given_up_after_the_timeout_on_every_transport() {
    let tmp = tempfile::tempdir().unwrap();
    let silent = Silent::start();
    let port = silent.addr.port();
    for (i, url) in [
        format!("https://127.0.0.1:{port}/org/repo.git"),
        format!("http://127.0.0.1:{port}/org/repo.git"),
        format!("git://127.0.0.1:{port}/org/repo.git"),
        format!("ssh://git@127.0.0.1:{port}/org/repo.git"),
    ]
    .into_iter()
    .enumerate()
    {
        let m = Arc::new(mirror(
            &tmp.path().join(format!("data{i}")),
            &url,
            Duration::from_secs(1),
            None,
        ));
        let err = fetch_within_limit(&m).unwrap_err();
        assert!(
            matches!(err, GitError::Unreachable { .. }),
            "{url}: {err:?}"
        );
        // Over ssh the reason is ssh's own line (`Connection to … timed out`), which gix may
        // miss on a loaded machine: then the error says the ssh command ended.
        let message = err.to_string();
        assert!(
            message.contains("timed out")
                || (url.starts_with("ssh:") && message.contains(SSH_ENDED)),
            "{url}: {err}"
        );
    }
}

/// Hostile and long-run: a remote that stalls in the middle of a fetch (its answers cut at
/// half of what a whole fetch takes), a hundred times in a row over git:// and twenty over
/// HTTPS. Each fetch gives up; nothing accumulates (file descriptors, files in the mirror);
/// and once the remote answers again the mirror fetches the whole history.
#[test]
fn remotes_that_stall_mid_fetch_are_given_up_and_the_mirror_stays_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("srv");
    let upstream = served_repo(&root, &tmp.path().join("work"));
    let daemon = GitDaemon::start(&root);
    let https = HttpsGitServer::start(root.clone(), Auth::None);
    let git_addr: SocketAddr = format!("127.0.0.1:{}", daemon.port).parse().unwrap();

    for (transport, upstream_addr, rounds) in [("git", git_addr, 100), ("https", https.addr, 20)] {
        let proxy = StallingProxy::start(upstream_addr);
        let url = match transport {
            "git" => format!("git://127.0.0.1:{}/repo.git", proxy.addr.port()),
            _ => format!("https://127.0.0.1:{}/repo.git", proxy.addr.port()),
        };
        // Whole fetches get a generous limit (a loaded machine may be slow to start
        // answering); stalled ones a short one, so a hundred of them stay quick.
        let open = |name: &str, timeout: Duration| {
            Arc::new(mirror(
                &tmp.path().join(format!("{transport}-{name}")),
                &url,
                timeout,
                Some(&https.ca_pem),
            ))
        };
        // How many bytes a whole fetch takes.
        fetch_within_limit(&open("whole", Duration::from_secs(30))).unwrap();
        let whole = proxy.passed.load(Ordering::SeqCst);
        assert!(whole > 4_000, "{transport}: {whole} bytes");

        let m = open("stalled", Duration::from_millis(200));
        let files_before = files_under(m.dir());
        let fds_before = open_fds();
        for round in 0..rounds {
            proxy.passed.store(0, Ordering::SeqCst);
            proxy.budget.store(whole / 2, Ordering::SeqCst);
            let err = fetch_within_limit(&m).unwrap_err();
            assert!(
                err.to_string().contains("timed out"),
                "{transport} round {round}: {err}"
            );
            assert!(
                matches!(err, GitError::Unreachable { .. } | GitError::Fetch { .. }),
                "{transport} round {round}: {err:?}"
            );
        }
        // Other tests of this binary run alongside: a leak of one descriptor per fetch would
        // be `rounds` more.
        let fds_after = open_fds();
        assert!(
            fds_after < fds_before + 15,
            "{transport}: {fds_before} → {fds_after} open files after {rounds} stalled fetches"
        );
        assert_eq!(files_under(m.dir()), files_before, "{transport}");

        // The same mirror, re-opened with the generous limit, fetches the whole history.
        drop(m);
        let m = open("stalled", Duration::from_secs(30));
        proxy.budget.store(usize::MAX, Ordering::SeqCst);
        fetch_within_limit(&m).unwrap();
        let main = m.resolve(&GitRef::Branch("main".into())).unwrap();
        assert_eq!(main.to_string(), upstream.head(), "{transport}");
    }
}

/// Hostile: `--git-timeout` takes whole seconds from 1 to 3600; anything else stops `serve`
/// before it starts, naming the flag (and no backtrace).
#[test]
fn the_git_timeout_flag_is_checked() {
    for value in ["0", "3601", "-5", "ten", "1.5", ""] {
        let output = Command::new(env!("CARGO_BIN_EXE_wardn"))
            .args(["serve", "--listen", "127.0.0.1:0"])
            .arg(format!("--git-timeout={value}"))
            .env("RUST_BACKTRACE", "1")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{value:?}: {stderr}");
        assert!(stderr.contains("--git-timeout"), "{value:?}: {stderr}");
        assert!(
            !stderr.contains("panicked") && !stderr.contains("backtrace"),
            "{value:?}: {stderr}"
        );
    }
}

/// An executable shell script `name` in `dir` running `body`.
fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    path
}

/// An `--apps` directory in `dir` with one App, `wardn/over-ssh`, whose source is fetched over
/// `ssh://` (port 2222).
fn ssh_app(dir: &Path) -> PathBuf {
    let apps = dir.join("apps");
    std::fs::create_dir_all(&apps).unwrap();
    std::fs::write(
        apps.join("app.yaml"),
        "apiVersion: cd.wardn.space/v1alpha1\nkind: App\nmetadata:\n  name: over-ssh\n  namespace: wardn\n\
         spec:\n  source:\n    type: Git\n    git:\n      repoURL: ssh://git@git.example.com:2222/org/app.git\n      branch: main\n\
         \x20 destination:\n    namespace: team-a\n",
    )
    .unwrap();
    apps
}

/// The ssh command line, end to end: `wardn generate rbac` fetches an App's `ssh://` source
/// through `GIT_SSH_COMMAND` (here a script that records its arguments and fails), which gets
/// its own options first, then batch mode and the limits of the default `--git-timeout`, then
/// gix's arguments: protocol version passing, port, login and the remote command (as Git
/// passes them: `git-upload-pack '/org/app.git'`).
#[test]
fn ssh_runs_git_ssh_command_with_batch_mode_and_the_limits() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("ssh-args.log");
    let fake = script(
        tmp.path(),
        "fake-ssh",
        &format!(
            "for a in \"$@\"; do printf '%s\\n' \"$a\" >> {}; done\necho 'fake ssh: no' >&2\nexit 255",
            log.display()
        ),
    );
    let apps = ssh_app(tmp.path());
    let output = Command::new(env!("CARGO_BIN_EXE_wardn"))
        .args(["generate", "rbac", "--apps"])
        .arg(&apps)
        .arg("--out")
        .arg(tmp.path().join("out"))
        .env(
            "GIT_SSH_COMMAND",
            format!("{} -o User=deploy", fake.display()),
        )
        .current_dir(tmp.path())
        .output()
        .unwrap();
    // The fetch fails (the script refuses), and the App's failure names ssh's complaint.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("fake ssh: no"), "{stderr}");
    let args = std::fs::read_to_string(&log).unwrap_or_default();
    let args: Vec<&str> = args.lines().collect();
    let expected_start = [
        "-o",
        "User=deploy",
        "-o",
        "BatchMode=yes",
        "-o",
        "ConnectTimeout=60",
        "-o",
        "ServerAliveInterval=15",
        "-o",
        "ServerAliveCountMax=4",
    ];
    assert_eq!(
        args.get(..expected_start.len()),
        Some(&expected_start[..]),
        "{args:?}"
    );
    assert_eq!(
        &args[expected_start.len()..],
        [
            "-o",
            "SendEnv=GIT_PROTOCOL",
            "-p2222",
            "git@git.example.com",
            "git-upload-pack",
            "'/org/app.git'"
        ],
        "{args:?}"
    );
}

/// A pipe to a child process that exits before reading is a write error the command reports,
/// not a silent death: `wardn generate rbac` fetching an `ssh://` source through an ssh command
/// that refuses at once (before reading gix's request) exits 1 naming the App and what ended
/// the fetch, every one of fifty times (it was killed by SIGPIPE, status 141 and no message, whenever gix wrote its
/// request after the ssh command had exited).
#[test]
fn an_ssh_command_that_exits_at_once_is_an_error_not_a_silent_death() {
    let tmp = tempfile::tempdir().unwrap();
    let refuse = script(
        tmp.path(),
        "refusing-ssh",
        "echo 'ssh: refused' >&2\nexit 255",
    );
    let apps = ssh_app(tmp.path());
    for round in 0..50 {
        let output = Command::new(env!("CARGO_BIN_EXE_wardn"))
            .args(["generate", "rbac", "--apps"])
            .arg(&apps)
            .arg("--out")
            .arg(tmp.path().join("out"))
            .env("GIT_SSH_COMMAND", &refuse)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "round {round}: {output:?}");
        assert!(
            stderr.contains("App wardn/over-ssh") && stderr.contains("error: "),
            "round {round}: {stderr}"
        );
        // Why the fetch failed: ssh's own line (not one gix turns into an error) and what the
        // failure means.
        assert!(
            stderr.contains("ssh: refused")
                && stderr.contains("the ssh command ended without answering"),
            "round {round}: {stderr}"
        );
    }
}
