//! Notifications against a local HTTP receiver: a `wardn serve` with `--notify-url` (JSON,
//! HMAC-signed), `--notify-slack-url` and an App's own `spec.notify` posts Held (with the
//! plan summary and the approve link), Approved and Failed; a receiver answering 500 first
//! gets the notification again (retried with backoff), and a notify URL that is not http(s)
//! is refused with the field named.

mod common;
mod support;

use std::sync::Arc;

use serde_json::Value;
use support::receiver::receiver;
use support::running::{PASSWORD, Running, eventually};
use wardn::app::Phase;
use wardn::daemon::ServeOptions;
use wardn::daemon::runner::{Completed, Operation};
use wardn::notify::{Format, Target, signature};

const SECRET: &str = "notify-secret-for-tests";

fn app_yaml(name: &str, dir: &std::path::Path, cluster: &str, extra: &str) -> String {
    format!(
        "apiVersion: cd.wardn.space/v1alpha1\nkind: App\nmetadata:\n  name: {name}\n  namespace: wardn\n\
         spec:\n  source:\n    type: Directory\n    directory:\n      path: {}\n\
         \x20 destination:\n    cluster: \"{cluster}\"\n    namespace: staging\n\
         \x20 syncPolicy:\n    automated: true\n    requiresApproval: true\n{extra}",
        dir.display()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_approved_and_failed_are_notified_signed_retried_and_per_app() {
    let sim = common::start(&["staging"]).await;
    let (hooks, received) = receiver().await;
    let work = tempfile::tempdir().unwrap();
    let apps = work.path().join("apps");
    let src = work.path().join("src");
    std::fs::create_dir_all(&apps).unwrap();
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(
        src.join("cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gated\ndata:\n  k: v\n",
    )
    .unwrap();
    let own = format!("  notify:\n  - url: {hooks}/app\n");
    std::fs::write(apps.join("gated.yaml"), app_yaml("gated", &src, "", &own)).unwrap();
    std::fs::write(
        apps.join("lost.yaml"),
        app_yaml("lost", &src, "nowhere", ""),
    )
    .unwrap();
    // Hostile: a notify URL that is not http(s) makes the App file invalid, naming the field.
    std::fs::write(
        apps.join("bad.yaml"),
        app_yaml("bad", &src, "", "  notify:\n  - url: file:///etc/passwd\n"),
    )
    .unwrap();

    let running = Running::start_with(ServeOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: work.path().join("data"),
        admin_password: Some(PASSWORD.into()),
        apps_dir: Some(apps),
        management_kubeconfig: Some(sim.kubeconfig.clone()),
        public_url: Some("https://wardn.example/".into()),
        notify: vec![
            Target {
                url: format!("{hooks}/flaky"),
                format: Format::Json,
            },
            Target {
                url: format!("{hooks}/slack"),
                format: Format::Slack,
            },
        ],
        notify_secret: Some(SECRET.into()),
        ..ServeOptions::default()
    })
    .await;
    let runner = Arc::clone(&running.runner);
    assert!(
        runner
            .file_errors()
            .iter()
            .any(|e| e.contains("spec.notify: notify url \"file:///etc/passwd\"")),
        "{:?}",
        runner.file_errors()
    );
    eventually("gated Held", || {
        runner.status("wardn/gated").and_then(|s| s.phase) == Some(Phase::Held)
    })
    .await;
    let held = runner.status("wardn/gated").unwrap();
    let hash = held.plan_hash.clone().unwrap();
    let events = |path: &str, event: &str| -> Vec<(Option<String>, Value)> {
        received
            .lock()
            .iter()
            .filter(|(p, _, v)| {
                p == path
                    && (v["event"] == event
                        || v["text"]
                            .as_str()
                            .is_some_and(|t| t.starts_with(&format!("*{event}*"))))
            })
            .map(|(_, s, v)| (s.clone(), v.clone()))
            .collect()
    };
    // The global JSON receiver answered 500 first: the notification came again.
    eventually("Held notified (retried)", || {
        !events("/flaky", "Held").is_empty()
    })
    .await;
    let (signed, body) = events("/flaky", "Held")
        .into_iter()
        .find(|(_, v)| v["app"] == "wardn/gated")
        .expect("Held for gated");
    assert_eq!(body["planHash"], hash.as_str());
    assert_eq!(body["address"], "local/gated");
    assert_eq!(
        body["approveUrl"],
        "https://wardn.example/api/v1/apps/local/gated/approve"
    );
    assert!(
        body["summary"].as_str().unwrap().contains("1 to create"),
        "{body}"
    );
    assert_eq!(
        signed.as_deref(),
        Some(signature(SECRET.as_bytes(), body.to_string().as_bytes()).as_str()),
        "the signature covers the body as sent"
    );
    eventually("Held on Slack and the App's own URL", || {
        !events("/slack", "Held").is_empty() && !events("/app", "Held").is_empty()
    })
    .await;
    let (unsigned, slack) = events("/slack", "Held").remove(0);
    assert_eq!(unsigned, None, "Slack payloads are not signed");
    assert!(slack["text"].as_str().unwrap().contains(&hash), "{slack}");
    // `lost` deploys to an unknown cluster: Failed, notified globally only.
    eventually("Failed notified", || {
        events("/flaky", "Failed")
            .iter()
            .any(|(_, v)| v["app"] == "wardn/lost")
    })
    .await;
    assert!(events("/app", "Failed").is_empty());

    let done = runner
        .operate("wardn/gated", Operation::Approve(Some(hash)))
        .await
        .unwrap();
    let Completed::Status(status) = done else {
        panic!("a status")
    };
    assert_eq!(status.phase, Some(Phase::Synced));
    eventually("Approved notified", || {
        !events("/flaky", "Approved").is_empty() && !events("/app", "Approved").is_empty()
    })
    .await;
    // Each receiver got one Held for gated, whatever the retries.
    let helds = events("/app", "Held").len();
    assert_eq!(helds, 1);
    running.stop().await;
}
