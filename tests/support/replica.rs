//! `wardn serve` as a separate process (a replica of a fleet): started with arguments and
//! environment, its listening address read from its stdout, killed (SIGKILL) on demand or when
//! dropped.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// The credentials key every test replica shares (base64 of 32 bytes).
pub const CREDENTIALS_KEY: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";

/// A running `wardn serve` process.
pub struct Process {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
}

impl Process {
    /// Starts `wardn serve ARGS --listen 127.0.0.1:0 --data-dir DATA` with the test keys and
    /// `admin_password`; returns once it prints its address. Its log goes to `log`.
    pub fn spawn(args: &[&str], data: &Path, admin_password: &str, log: &Path) -> Process {
        let log = std::fs::File::create(log).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_wardn"))
            .arg("serve")
            .args(args)
            .args(["--listen", "127.0.0.1:0", "--probe-interval", "3600"])
            .arg("--data-dir")
            .arg(data)
            .env("WARDN_CREDENTIALS_KEY", CREDENTIALS_KEY)
            .env("WARDN_ADMIN_PASSWORD", admin_password)
            .env("NO_COLOR", "1")
            .env_remove("WARDN_APPS_DIR")
            .env_remove("WARDN_ROLE")
            .env_remove("KUBECONFIG")
            .env_remove("POD_NAME")
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let base = loop {
            let line = lines
                .next()
                .expect("wardn serve printed its address")
                .unwrap();
            if let Some(addr) = line.strip_prefix("wardn: listening on ") {
                break addr.to_string();
            }
        };
        std::thread::spawn(move || for _ in lines {});
        Process { child, base }
    }

    /// The URL of `path` on this process.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Kills the process with SIGKILL (no shutdown: its Lease stays until it expires).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}
