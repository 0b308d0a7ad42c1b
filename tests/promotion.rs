//! Digest promotion end to end on kubesim, through the API of an in-process `wardn serve`:
//! a staging App (automated) and a production App (requires approval) render the same image
//! at different tags; promoting staging pins the digest staging's Pods run on production
//! (Held, then approved), later changes keep the pin, history lists each promotion, a
//! rollback re-pins an earlier one, unpin returns to the rendered tag, the pins survive a
//! restart, and every refusal (source not ready, mixed rollout, nothing to pin, bad input)
//! answers with its status and reason.

mod common;
mod support;

use serde_json::{Value, json};
use support::running::{PASSWORD, Running, eventually};
use wardn::app::Phase;

const REPO: &str = "ghcr.io/acme/web";

fn app_yaml(name: &str, dir: &std::path::Path, namespace: &str, approval: bool) -> String {
    policy_app_yaml(name, dir, namespace, approval, "")
}

/// An App with `promotion` (YAML lines under `spec.promotion`, indented by four).
fn policy_app_yaml(
    name: &str,
    dir: &std::path::Path,
    namespace: &str,
    approval: bool,
    promotion: &str,
) -> String {
    let promotion = if promotion.is_empty() {
        String::new()
    } else {
        format!("  promotion:\n{promotion}")
    };
    format!(
        "apiVersion: cd.wardn.space/v1alpha1\nkind: App\nmetadata:\n  name: {name}\n  namespace: wardn\n\
         spec:\n  source:\n    type: Directory\n    directory:\n      path: {}\n\
         \x20 destination:\n    cluster: \"\"\n    namespace: {namespace}\n\
         \x20 syncPolicy:\n    automated: true\n    requiresApproval: {approval}\n{promotion}",
        dir.display()
    )
}

/// Writes a Deployment `web` running `REPO:tag` (and a ConfigMap holding `note`) into `dir`.
fn write_web(dir: &std::path::Path, image: &str, note: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("kustomization.yaml"),
        "resources:\n- web.yaml\n- note.yaml\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("web.yaml"),
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n\
             \x20 selector:\n    matchLabels:\n      app: web\n  template:\n    metadata:\n      labels:\n        app: web\n\
             \x20   spec:\n      containers:\n      - name: web\n        image: {image}\n"
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("note.yaml"),
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: note\ndata:\n  note: {note}\n"
        ),
    )
    .unwrap();
}

struct Api {
    http: reqwest::Client,
    base: String,
    cookie: String,
}

impl Api {
    async fn new(base: &str) -> Api {
        Api {
            http: reqwest::Client::new(),
            base: base.to_string(),
            cookie: support::server::login(base, PASSWORD).await,
        }
    }

    async fn call(&self, method: reqwest::Method, path: &str) -> (u16, Value) {
        let response = self
            .http
            .request(method, format!("{}{path}", self.base))
            .header("cookie", &self.cookie)
            .header("content-type", "application/json")
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    async fn post(&self, path: &str) -> (u16, Value) {
        self.call(reqwest::Method::POST, path).await
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        self.call(reqwest::Method::GET, path).await
    }

    /// An API token for the CLI.
    async fn token(&self) -> String {
        let response = self
            .http
            .post(format!("{}/api/v1/tokens", self.base))
            .header("cookie", &self.cookie)
            .json(&json!({"name": "cli"}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 201);
        let body: Value = response.json().await.unwrap();
        body["token"].as_str().unwrap().to_string()
    }

    /// Runs `wardn apps ARGS` against this server; returns the exit code and stdout.
    async fn cli(&self, args: &[&str]) -> (i32, String) {
        let token = self.token().await;
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_wardn"))
            .arg("apps")
            .args(args)
            .env("WARDN_SERVER", &self.base)
            .env("WARDN_TOKEN", token)
            .env("WARDN_CONFIG_DIR", "/nonexistent-wardn-config")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        let stderr = String::from_utf8_lossy(&out.stderr);
        (out.status.code().unwrap_or(-1), format!("{stdout}{stderr}"))
    }

    /// Approves the Held plan of `app` (`local/NAME`) by its hash.
    async fn approve(&self, app: &str, status: &Value) -> Value {
        let hash = status["status"]["planHash"].as_str().unwrap_or_default();
        let response = self
            .http
            .post(format!("{}/api/v1/apps/{app}/approve", self.base))
            .header("cookie", &self.cookie)
            .json(&json!({ "plan_hash": hash }))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 200);
        response.json().await.unwrap()
    }
}

/// The digests the Pods of Deployment `web` in `namespace` run (containerStatuses imageID).
fn pod_digests(sim: &common::Sim, namespace: &str) -> Vec<String> {
    let mut digests: Vec<String> = sim
        .cluster
        .list_objects("v1", "Pod")
        .into_iter()
        .filter(|p| {
            p["metadata"]["namespace"] == namespace && p["metadata"]["labels"]["app"] == "web"
        })
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .filter_map(|p| {
            let id = p["status"]["containerStatuses"][0]["imageID"].as_str()?;
            Some(id.rsplit('@').next()?.to_string())
        })
        .collect();
    digests.sort();
    digests.dedup();
    digests
}

fn deployed_image(sim: &common::Sim, namespace: &str) -> String {
    let web = sim
        .cluster
        .get_object("apps/v1", "Deployment", Some(namespace), "web")
        .expect("Deployment web");
    web["spec"]["template"]["spec"]["containers"][0]["image"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn staging_digests_are_promoted_to_production_kept_rolled_back_and_unpinned() {
    let sim = common::start(&["staging", "production"]).await;
    let work = tempfile::tempdir().unwrap();
    let apps = work.path().join("apps");
    std::fs::create_dir_all(&apps).unwrap();
    let staging_src = work.path().join("staging");
    let production_src = work.path().join("production");
    let other_src = work.path().join("other");
    write_web(&staging_src, &format!("{REPO}:1.28"), "s1");
    write_web(&production_src, &format!("{REPO}:1.27"), "p1");
    write_web(&other_src, "ghcr.io/acme/unrelated:1", "o1");
    for (name, src, ns, approval) in [
        ("staging", &staging_src, "staging", false),
        ("production", &production_src, "production", true),
        ("other", &other_src, "default", false),
    ] {
        std::fs::write(
            apps.join(format!("{name}.yaml")),
            app_yaml(name, src, ns, approval),
        )
        .unwrap();
    }
    let data = work.path().join("data");
    let running = Running::start(&sim.kubeconfig, &data, &apps).await;
    let runner = std::sync::Arc::clone(&running.runner);
    let phase = |key: &str| runner.status(key).and_then(|s| s.phase);
    eventually("staging Synced, production Held", || {
        phase("wardn/staging") == Some(Phase::Synced)
            && phase("wardn/production") == Some(Phase::Held)
    })
    .await;
    let api = Api::new(&running.base).await;
    let (_, production) = api.get("/api/v1/apps/local/production").await;
    api.approve("local/production", &production).await;
    assert_eq!(deployed_image(&sim, "production"), format!("{REPO}:1.27"));

    // Refusals first: an unknown or ambiguous target, the App itself, a source that is not
    // Synced and Healthy, a target that renders none of the images.
    let (status, body) = api
        .post("/api/v1/apps/local/staging/promote?to=nowhere")
        .await;
    assert_eq!(status, 404, "{body}");
    let (status, body) = api
        .post("/api/v1/apps/local/staging/promote?to=local/staging")
        .await;
    assert_eq!(status, 422, "{body}");
    let (status, body) = api.post("/api/v1/apps/local/staging/promote?to=/x").await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = api.post("/api/v1/apps/local/staging/promote").await;
    assert_eq!(status, 400, "`to` is required: {body}");
    let (status, body) = api
        .post("/api/v1/apps/local/staging/promote?to=other")
        .await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("renders none of the promoted images"),
        "{body}"
    );

    // Promote: production is Held with the promotion, its images and the plan hash.
    let staging_digests = pod_digests(&sim, "staging");
    assert_eq!(staging_digests.len(), 1, "{staging_digests:?}");
    let digest = staging_digests[0].clone();
    let (status, promoted) = api
        .post("/api/v1/apps/local/staging/promote?to=production")
        .await;
    assert_eq!(status, 200, "{promoted}");
    assert_eq!(promoted["status"]["phase"], "Held", "{promoted}");
    let staging_revision = runner
        .status("wardn/staging")
        .unwrap()
        .synced_revision
        .unwrap();
    let line = format!("{REPO}:1.28 → {REPO}@{digest}");
    let headline = format!("promotion from local/staging at {staging_revision}");
    let message = promoted["status"]["message"].as_str().unwrap();
    assert!(
        message.starts_with(&headline) && message.contains(&line),
        "{message}"
    );
    assert!(
        promoted["text"].as_str().unwrap().contains(&line),
        "{promoted}"
    );
    assert_eq!(promoted["status"]["promotedFrom"]["app"], "staging");
    assert_eq!(promoted["status"]["promotedFrom"]["cluster"], "local");
    assert_eq!(
        promoted["status"]["promotedFrom"]["revision"],
        staging_revision.as_str()
    );
    assert_eq!(
        promoted["status"]["promotedFrom"]["images"][0]["digest"],
        digest.as_str()
    );
    assert_eq!(promoted["promotion"]["outcome"], "Held");
    let first_id = promoted["promotion"]["id"].as_i64().unwrap();
    let (_, diff) = api.get("/api/v1/apps/local/production/diff").await;
    let text = diff["text"].as_str().unwrap();
    assert!(
        text.starts_with(&format!("# {headline}\n")) && text.contains(&line),
        "{text}"
    );
    assert_eq!(
        deployed_image(&sim, "production"),
        format!("{REPO}:1.27"),
        "Held: nothing applied"
    );

    // Approved: production's Pods run exactly staging's digest.
    let approved = api.approve("local/production", &promoted).await;
    assert_eq!(approved["status"]["phase"], "Synced", "{approved}");
    assert_eq!(
        deployed_image(&sim, "production"),
        format!("{REPO}@{digest}")
    );
    eventually("production Pods on the promoted digest", || {
        pod_digests(&sim, "production") == staging_digests
    })
    .await;
    // Checked with the real kubectl too.
    let ids = sim.kubectl(
        &[
            "get",
            "pods",
            "-n",
            "production",
            "-l",
            "app=web",
            "-o",
            "jsonpath={.items[*].status.containerStatuses[*].imageID}",
        ],
        None,
    );
    assert!(
        !ids.is_empty() && ids.split(' ').all(|id| id.ends_with(&digest)),
        "{ids}"
    );

    // A later change of production's source keeps the pin.
    write_web(&production_src, &format!("{REPO}:1.26"), "p2");
    eventually("the change Held", || {
        runner
            .status("wardn/production")
            .is_some_and(|s| s.phase == Some(Phase::Held) && s.plan.is_some_and(|p| p.updates == 1))
    })
    .await;
    let (_, held) = api.get("/api/v1/apps/local/production").await;
    assert!(
        held["status"]["message"]
            .as_str()
            .unwrap()
            .starts_with(&headline),
        "{held}"
    );
    api.approve("local/production", &held).await;
    assert_eq!(
        deployed_image(&sim, "production"),
        format!("{REPO}@{digest}")
    );
    let note = sim
        .cluster
        .get_object("v1", "ConfigMap", Some("production"), "note")
        .unwrap();
    assert_eq!(note["data"]["note"], "p2");

    // Staging moves on; a mixed rollout (a stray Pod on another image) is refused with 422.
    write_web(&staging_src, &format!("{REPO}:1.29"), "s2");
    eventually("staging on 1.29", || {
        deployed_image(&sim, "staging").ends_with(":1.29")
            && phase("wardn/staging") == Some(Phase::Synced)
            && pod_digests(&sim, "staging").len() == 1
            && pod_digests(&sim, "staging") != staging_digests
    })
    .await;
    // A ReplicaSet outside the Deployment whose Pods its selector matches: as in a rollout
    // that has not finished, the Pods behind `web` run two digests.
    let stray = format!(
        "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata:\n  name: stray\nspec:\n  replicas: 1\n\
         \x20 selector:\n    matchLabels:\n      app: web\n      stray: \"yes\"\n  template:\n    metadata:\n\
         \x20     labels:\n        app: web\n        stray: \"yes\"\n    spec:\n      containers:\n\
         \x20     - name: web\n        image: {REPO}:0.1\n"
    );
    sim.kubectl(&["apply", "-n", "staging", "-f", "-"], Some(&stray));
    eventually("the stray Pod runs", || {
        pod_digests(&sim, "staging").len() == 2
    })
    .await;
    let (status, body) = api
        .post("/api/v1/apps/local/staging/promote?to=production")
        .await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("several digests"),
        "{body}"
    );
    sim.kubectl(
        &[
            "scale",
            "replicaset",
            "stray",
            "-n",
            "staging",
            "--replicas=0",
        ],
        None,
    );
    eventually("the stray Pod gone", || {
        pod_digests(&sim, "staging").len() == 1
    })
    .await;
    // The same with a bare Pod (no controller) that the selector matches.
    let bare = format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: bare\n  labels:\n    app: web\n\
         spec:\n  containers:\n  - name: web\n    image: {REPO}:0.2\n"
    );
    sim.kubectl(&["apply", "-n", "staging", "-f", "-"], Some(&bare));
    eventually("the bare Pod runs", || {
        pod_digests(&sim, "staging").len() == 2
    })
    .await;
    let (status, body) = api
        .post("/api/v1/apps/local/staging/promote?to=production")
        .await;
    assert_eq!(status, 422, "{body}");
    sim.kubectl(&["delete", "pod", "bare", "-n", "staging"], None);
    eventually("the bare Pod gone", || {
        pod_digests(&sim, "staging").len() == 1
    })
    .await;
    let new_digest = pod_digests(&sim, "staging")[0].clone();
    // This time through the CLI: exit code 3 (Held), the promotion and the approve command.
    let (code, out) = api
        .cli(&["promote", "local/staging", "--to", "local/production"])
        .await;
    assert_eq!(code, 3, "{out}");
    assert!(
        out.contains(&format!("{REPO}:1.29 → {REPO}@{new_digest}")),
        "{out}"
    );
    assert!(
        out.contains("approve with: wardn apps approve local/production --plan-hash "),
        "{out}"
    );
    let (code, out) = api
        .cli(&["promote", "local/staging", "--to", "prod&x=1"])
        .await;
    assert_eq!(code, 1, "{out}");
    let (_, second) = api.get("/api/v1/apps/local/production").await;
    api.approve("local/production", &second).await;
    assert_eq!(
        deployed_image(&sim, "production"),
        format!("{REPO}@{new_digest}")
    );
    let (code, table) = api.cli(&["history", "local/production"]).await;
    assert_eq!(code, 0, "{table}");
    assert!(table.starts_with("ID  SOURCE"), "{table}");
    assert!(
        table.contains(&new_digest) && table.contains(&digest),
        "{table}"
    );

    // History: newest first, refusals recorded too; a rollback re-pins the first promotion.
    let (status, history) = api.get("/api/v1/apps/local/production/promotions").await;
    assert_eq!(status, 200, "{history}");
    let records = history["promotions"].as_array().unwrap();
    let outcomes: Vec<&str> = records
        .iter()
        .map(|r| r["outcome"].as_str().unwrap())
        .collect();
    // Held when promoted, then approved: the record says so.
    assert_eq!(outcomes[0], "Approved: Synced");
    assert!(outcomes[1].starts_with("refused: "), "{outcomes:?}");
    assert_eq!(*outcomes.last().unwrap(), "Approved: Synced");
    assert_eq!(records.last().unwrap()["id"].as_i64(), Some(first_id));
    assert_eq!(records.last().unwrap()["actor"], "admin");
    assert_eq!(
        records.last().unwrap()["images"][0]["digest"],
        digest.as_str()
    );
    let (status, body) = api
        .post("/api/v1/apps/local/production/rollback?to=999")
        .await;
    assert_eq!(status, 404, "{body}");
    let (status, body) = api
        .post("/api/v1/apps/local/production/rollback?to=x")
        .await;
    assert_eq!(status, 400, "{body}");
    let refused_id = records[1]["id"].as_i64().unwrap();
    let (status, body) = api
        .post(&format!(
            "/api/v1/apps/local/production/rollback?to={refused_id}"
        ))
        .await;
    assert_eq!(status, 409, "a refused promotion pinned nothing: {body}");
    let (status, back) = api
        .post(&format!(
            "/api/v1/apps/local/production/rollback?to={first_id}"
        ))
        .await;
    assert_eq!(
        (status, &back["status"]["phase"]),
        (200, &json!("Held")),
        "{back}"
    );
    api.approve("local/production", &back).await;
    assert_eq!(
        deployed_image(&sim, "production"),
        format!("{REPO}@{digest}")
    );

    // Audited with the digests.
    let (_, audit) = api.get("/api/v1/audit").await;
    let entries = audit.to_string();
    assert!(
        entries.contains("app.promote") && entries.contains(&format!("{REPO}@{digest}")),
        "{audit}"
    );
    assert!(entries.contains("app.rollback"), "{audit}");

    // The pins survive a restart: the restored status carries them and a pass changes nothing.
    running.stop().await;
    let running = Running::start(&sim.kubeconfig, &data, &apps).await;
    let runner = std::sync::Arc::clone(&running.runner);
    let pins = runner
        .status("wardn/production")
        .and_then(|s| s.promoted_from);
    assert_eq!(
        pins.map(|p| p.images[0].digest.clone()),
        Some(digest.clone())
    );
    let api = Api::new(&running.base).await;
    eventually("production rendered", || {
        runner.status("wardn/production").and_then(|s| s.phase) == Some(Phase::Synced)
    })
    .await;
    let (status, synced) = api.post("/api/v1/apps/local/production/sync").await;
    assert_eq!(
        (status, &synced["status"]["phase"]),
        (200, &json!("Synced")),
        "{synced}"
    );
    assert_eq!(
        deployed_image(&sim, "production"),
        format!("{REPO}@{digest}")
    );

    // Unpin: production goes back to the tag its source renders.
    let (status, unpinned) = api.post("/api/v1/apps/local/production/unpin").await;
    assert_eq!(
        (status, &unpinned["status"]["phase"]),
        (200, &json!("Held")),
        "{unpinned}"
    );
    assert!(
        unpinned["status"].get("promotedFrom").is_none(),
        "{unpinned}"
    );
    api.approve("local/production", &unpinned).await;
    assert_eq!(deployed_image(&sim, "production"), format!("{REPO}:1.26"));
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_that_is_not_synced_and_healthy_is_not_promoted() {
    let sim = common::start(&["staging", "production"]).await;
    let work = tempfile::tempdir().unwrap();
    let apps = work.path().join("apps");
    std::fs::create_dir_all(&apps).unwrap();
    let held_src = work.path().join("held");
    let target_src = work.path().join("target");
    write_web(&held_src, &format!("{REPO}:1"), "h");
    write_web(&target_src, &format!("{REPO}:2"), "t");
    std::fs::write(
        apps.join("held.yaml"),
        app_yaml("held", &held_src, "staging", true),
    )
    .unwrap();
    std::fs::write(
        apps.join("target.yaml"),
        app_yaml("target", &target_src, "production", false),
    )
    .unwrap();
    let running = Running::start(&sim.kubeconfig, &work.path().join("data"), &apps).await;
    let runner = std::sync::Arc::clone(&running.runner);
    eventually("held Held", || {
        runner.status("wardn/held").and_then(|s| s.phase) == Some(Phase::Held)
    })
    .await;
    let api = Api::new(&running.base).await;
    let (status, body) = api.post("/api/v1/apps/local/held/promote?to=target").await;
    assert_eq!(status, 409, "{body}");
    let error = body["error"].as_str().unwrap();
    assert!(
        error.contains("not Synced and Healthy (phase Held"),
        "{error}"
    );
    let (_, history) = api.get("/api/v1/apps/local/target/promotions").await;
    assert!(
        history["promotions"][0]["outcome"]
            .as_str()
            .unwrap()
            .contains("not Synced and Healthy"),
        "{history}"
    );
    assert!(
        runner
            .status("wardn/target")
            .unwrap()
            .promoted_from
            .is_none()
    );
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstreams_soak_times_and_automatic_promotion() {
    let sim = common::start(&["staging", "production", "canary"]).await;
    let work = tempfile::tempdir().unwrap();
    let apps = work.path().join("apps");
    std::fs::create_dir_all(&apps).unwrap();
    for (name, image) in [
        ("staging", "1.28"),
        ("soaking", "1.0"),
        ("auto", "1.0"),
        ("canary", "1.5"),
    ] {
        write_web(&work.path().join(name), &format!("{REPO}:{image}"), name);
    }
    let file = |name: &str, ns: &str, promotion: &str| {
        let dir = work.path().join(name);
        std::fs::write(
            apps.join(format!("{name}.yaml")),
            policy_app_yaml(name, &dir, ns, false, promotion),
        )
        .unwrap();
    };
    file("staging", "staging", "");
    file("canary", "canary", "");
    file(
        "soaking",
        "production",
        "    from: staging\n    requireHealthyFor: 1h\n",
    );
    file(
        "auto",
        "default",
        "    from: local/staging\n    autoPromote: true\n",
    );
    // Hostile: autoPromote without an upstream is refused with the field named.
    std::fs::write(
        apps.join("broken.yaml"),
        policy_app_yaml(
            "broken",
            &work.path().join("auto"),
            "default",
            false,
            "    autoPromote: true\n",
        ),
    )
    .unwrap();
    let running = Running::start(&sim.kubeconfig, &work.path().join("data"), &apps).await;
    let runner = std::sync::Arc::clone(&running.runner);
    assert!(
        runner
            .file_errors()
            .iter()
            .any(|e| e.contains("spec.promotion.autoPromote: needs spec.promotion.from")),
        "{:?}",
        runner.file_errors()
    );
    let synced = |key: &str| runner.status(key).and_then(|s| s.phase) == Some(Phase::Synced);
    eventually("all Synced", || {
        ["wardn/staging", "wardn/canary", "wardn/soaking"]
            .iter()
            .all(|k| synced(k))
    })
    .await;
    let api = Api::new(&running.base).await;

    // The soak: refused with how long is left.
    let (status, body) = api
        .post("/api/v1/apps/local/staging/promote?to=soaking")
        .await;
    assert_eq!(status, 409, "{body}");
    let error = body["error"].as_str().unwrap();
    assert!(
        error.contains("the target requires 3600s") && error.contains("s left)"),
        "{error}"
    );
    // Only the upstream may be promoted.
    let (status, body) = api
        .post("/api/v1/apps/local/canary/promote?to=soaking")
        .await;
    assert_eq!(status, 409, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("takes promotions from staging only"),
        "{body}"
    );

    // autoPromote: the staging digest reaches `auto` on its own, recorded as wardn's.
    let digest = pod_digests(&sim, "staging")[0].clone();
    eventually("auto promoted", || {
        deployed_image(&sim, "default") == format!("{REPO}@{digest}") && synced("wardn/auto")
    })
    .await;
    let (_, history) = api.get("/api/v1/apps/local/auto/promotions").await;
    assert_eq!(
        history["promotions"].as_array().unwrap().len(),
        1,
        "{history}"
    );
    assert_eq!(
        history["promotions"][0]["actor"], "wardn/autoPromote",
        "{history}"
    );
    assert_eq!(history["promotedFrom"]["app"], "staging", "{history}");
    // A new staging revision is promoted once it runs.
    write_web(&work.path().join("staging"), &format!("{REPO}:1.29"), "s2");
    eventually("auto promoted again", || {
        let digests = pod_digests(&sim, "staging");
        digests.len() == 1
            && digests[0] != digest
            && deployed_image(&sim, "default") == format!("{REPO}@{}", digests[0])
    })
    .await;
    let (_, history) = api.get("/api/v1/apps/local/auto/promotions").await;
    let outcomes: Vec<&Value> = history["promotions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["outcome"])
        .collect();
    assert!(outcomes.len() >= 2, "{history}");
    running.stop().await;
}
