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

/// No e2e script pipes into `grep -q`: under `set -o pipefail` the pipeline fails at random
/// when grep has matched and quits while the writer still has output (the writer dies of
/// SIGPIPE). Scenario 07's `echo "$shown" | grep -q` failed so on a loaded machine; the
/// scripts match on a here-string (`grep -q PATTERN <<<"$out"`) or through `output_has`.
#[test]
fn no_e2e_script_pipes_into_grep_q() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("e2e");
    let mut scripts = vec![root.clone()];
    let mut offending = Vec::new();
    let mut read = 0;
    while let Some(path) = scripts.pop() {
        if path.is_dir() {
            scripts.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        if path.extension().is_none_or(|e| e != "sh") {
            continue;
        }
        read += 1;
        let text = std::fs::read_to_string(&path).unwrap();
        for (number, line) in text.lines().enumerate() {
            let code = line.split(" #").next().unwrap_or(line);
            if !code.trim_start().starts_with('#')
                && code.split('|').skip(1).any(|piped| {
                    let mut words = piped.split_whitespace();
                    words.next() == Some("grep")
                        && words
                            .take_while(|w| w.starts_with('-'))
                            .any(|w| w == "--quiet" || (!w.starts_with("--") && w.contains('q')))
                })
            {
                offending.push(format!("{}:{}: {line}", path.display(), number + 1));
            }
        }
    }
    assert!(
        read > 10,
        "only {read} scripts read under {}",
        root.display()
    );
    assert!(offending.is_empty(), "{}", offending.join("\n"));
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
