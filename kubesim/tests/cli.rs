//! The `kubesim serve` binary: kubeconfigs and tokens written per cluster, usable by kubectl,
//! fixed ports, clean stop on SIGTERM.

mod common;

use std::time::Duration;

use common::KUBECTL;
use serde_json::Value;

#[tokio::test]
async fn serve_writes_kubeconfigs_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let free_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_kubesim"))
        .args([
            "serve",
            "--clusters",
            &format!("mgmt,staging={free_port}"),
            "--nodes",
            "2",
            "--namespaces",
            "team-a",
        ])
        .arg("--dir")
        .arg(dir.path())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let staging = dir.path().join("staging.kubeconfig");
    for _ in 0..600 {
        if dir.path().join("staging.tokens.json").exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let kubeconfig = std::fs::read_to_string(&staging).unwrap();
    assert!(kubeconfig.contains(&format!("server: https://127.0.0.1:{free_port}")));
    let tokens: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("mgmt.tokens.json")).unwrap(),
    )
    .unwrap();
    assert!(tokens["admin"].is_string() && tokens["expired"].is_string());
    assert!(tokens["namespaced"]["team-a"].is_string());

    let out = tokio::process::Command::new(KUBECTL)
        .arg("--kubeconfig")
        .arg(&staging)
        .arg("--cache-dir")
        .arg(dir.path().join("cache"))
        .args(["get", "nodes", "-o", "name"])
        .output()
        .await
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().count(),
        2,
        "{out:?}"
    );

    let pid = child.id().unwrap().to_string();
    let killed = tokio::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .await
        .unwrap();
    assert!(killed.success());
    let out = child.wait_with_output().await.unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("cluster mgmt: https://127.0.0.1:"),
        "{stdout}"
    );
    assert!(stdout.trim_end().ends_with("stopped"), "{stdout}");
}
