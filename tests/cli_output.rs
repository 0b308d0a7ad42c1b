//! How the `wardn` binary ends: a failure prints its cause chain on one line and no backtrace
//! even with `RUST_BACKTRACE=1`, and output into a closed pipe ends the command quietly.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

fn wardn() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_wardn"));
    command.env("RUST_BACKTRACE", "1");
    command
}

#[test]
fn failures_print_the_cause_chain_without_a_backtrace() {
    let missing = tempfile::tempdir().unwrap().path().join("no-such-overlay");
    let output = wardn().arg("render").arg(&missing).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(
        stderr.contains("no-such-overlay"),
        "names the object: {stderr}"
    );
    assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
    for noise in ["backtrace", "Backtrace", "Caused by", "panicked"] {
        assert!(!stderr.contains(noise), "{noise}: {stderr}");
    }
}

#[test]
fn a_closed_pipe_ends_the_command_quietly() {
    // Far more output than a pipe buffers, so the writer meets the closed pipe.
    let dir = tempfile::tempdir().unwrap();
    let mut manifests = String::new();
    for i in 0..4000 {
        manifests.push_str(&format!(
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{i}\ndata:\n  key: value-{i}\n"
        ));
    }
    std::fs::write(dir.path().join("objects.yaml"), manifests).unwrap();
    let mut child = wardn()
        .arg("render")
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert_eq!(first, "apiVersion: v1\n");
    // The reader is gone: the rest of the output meets a closed pipe.
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!stderr.contains("Broken pipe"), "{stderr}");
}

/// Stops the child it holds by its PID when dropped (a failed assertion must not leave a
/// daemon running).
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_second_daemon_on_the_same_data_directory_refuses_to_start() {
    let data = tempfile::tempdir().unwrap();
    let serve = || {
        let mut command = wardn();
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(data.path())
            .env(
                "WARDN_CREDENTIALS_KEY",
                "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
            )
            .env("WARDN_ADMIN_PASSWORD", "a password for this test")
            .env_remove("KUBECONFIG")
            .env_remove("WARDN_APPS_DIR")
            .env_remove("WARDN_ROLE");
        command
    };
    let first = Running(
        serve()
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let lock = data.path().join("wardn.lock");
    let started = std::time::Instant::now();
    while !std::fs::read_to_string(&lock).is_ok_and(|t| t.contains("pid")) {
        assert!(
            started.elapsed().as_secs() < 60,
            "the first daemon never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let second = serve().output().unwrap();
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("in use by another wardn (pid {}", first.0.id())),
        "{stderr}"
    );
    drop(first);
    // Once the first is gone, the directory is free again (the lock dies with its process).
    let started = std::time::Instant::now();
    let mut third = Running(
        serve()
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert!(
        third.0.try_wait().unwrap().is_none(),
        "a daemon starts on a released data directory ({:?})",
        started.elapsed()
    );
}
