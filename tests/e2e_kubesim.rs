//! `make test` covers the e2e suite: runs e2e/kubesim/run.sh (wardn serve + every
//! e2e/scenarios/*.sh, driven by curl, kubectl 1.32 and the wardn CLI) against a kubesim
//! cluster started here.

mod common;

use std::process::Command;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_scenarios_pass_on_kubesim() {
    scenarios_pass("all").await;
}

/// The same scenarios through the split install: a `--role server` process answers the CLI,
/// curl and the approvals, a `--role operator` process reconciles the Apps through it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_scenarios_pass_on_kubesim_through_a_split_install() {
    scenarios_pass("split").await;
}

/// Runs every scenario with `E2E_ROLES=roles` against a kubesim cluster started here.
async fn scenarios_pass(roles: &str) {
    let sim = common::start(&["e2e"]).await;
    let wardn = std::path::Path::new(env!("CARGO_BIN_EXE_wardn"));
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/e2e/kubesim/run.sh");
    let kubeconfig = sim.kubeconfig.clone();
    let bin = wardn.parent().unwrap().to_path_buf();
    let roles = roles.to_string();
    let output = tokio::task::spawn_blocking(move || {
        Command::new("bash")
            .arg(script)
            .env("E2E_BIN", bin)
            .env("E2E_TARGET_KUBECONFIG", kubeconfig)
            .env("E2E_NAMESPACE", "e2e")
            .env("E2E_ROLES", &roles)
            .env("KUBECTL", common::KUBECTL)
            .env_remove("WARDN_SERVER")
            .env_remove("WARDN_TOKEN")
            .env_remove("WARDN_CREDENTIALS_KEY")
            .env_remove("WARDN_INTERNAL_TOKEN")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "stdout: {}\nstderr: {stderr}",
        String::from_utf8_lossy(&output.stdout)
    );
    for scenario in [
        "01-register-cluster",
        "02-sync",
        "03-held-approve",
        "04-prune",
        "05-allowlist",
        "06-promote",
        "07-template-routing",
        "08-too-few-permissions",
    ] {
        assert!(stderr.contains(&format!("[e2e {scenario}] ok")), "{stderr}");
    }
}
