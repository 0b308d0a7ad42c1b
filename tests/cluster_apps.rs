//! The Apps seen from the clusters' side, with the `wardn` binary against an in-process server
//! and kubesim clusters: `clusters validate` (unregistered cluster, disallowed destination and
//! object namespaces, rendered CRDs redeclaring built-in kinds, cluster-scoped built-ins),
//! `generate rbac` (files kubectl 1.32 applies, whose token can do exactly what the Apps
//! need), `clusters check` (access reviews with an admin and a namespaced token) and
//! `clusters bootstrap --apps`.

mod common;
mod support;

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};
use support::server::TestServer;
use wardn::clusters::registry::RegisterRequest;

const WARDN: &str = env!("CARGO_BIN_EXE_wardn");

fn wardn(dir: &Path, args: &[&str]) -> Output {
    Command::new(WARDN)
        .args(args)
        .env("WARDN_CONFIG_DIR", dir)
        .env_remove("WARDN_SERVER")
        .env_remove("WARDN_TOKEN")
        .env_remove("WARDN_APPS_DIR")
        .output()
        .unwrap()
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

/// Writes a Directory App `name` for `cluster`/`namespace` whose source holds `manifests`.
fn write_app(root: &Path, name: &str, cluster: &str, namespace: &str, manifests: &str) {
    let source = root.join("sources").join(name);
    std::fs::create_dir_all(&source).unwrap();
    std::fs::write(source.join("objects.yaml"), manifests).unwrap();
    let apps = root.join("apps");
    std::fs::create_dir_all(&apps).unwrap();
    std::fs::write(
        apps.join(format!("{name}.yaml")),
        format!(
            "apiVersion: cd.wardn.space/v1alpha1\nkind: App\nmetadata:\n  name: {name}\n\
             spec:\n  source:\n    type: Directory\n    directory:\n      path: {}\n\
             \x20 destination:\n    cluster: \"{cluster}\"\n    namespace: {namespace}\n\
             \x20 syncPolicy:\n    automated: true\n",
            source.display()
        ),
    )
    .unwrap();
}

const WEB: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  k: v\n---\n\
apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  selector:\n    matchLabels: {app: web}\n\
  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n      - name: web\n        image: nginx\n";

async fn register(server: &TestServer, name: &str, kubeconfig: String, url: String, ns: &[&str]) {
    server
        .registry
        .register(
            "tests",
            RegisterRequest {
                name: name.into(),
                server_url: url,
                kubeconfig,
                namespaces: ns.iter().map(|n| n.to_string()).collect(),
                allow_insecure_tls: false,
            },
        )
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validate_reports_every_violation_with_file_field_and_reason() {
    let sim = common::start(&["team-a"]).await;
    let server = TestServer::start(None).await;
    let token = server.token().await;
    register(
        &server,
        "target",
        sim.cluster.kubeconfig(),
        sim.cluster.url(),
        &["team-a"],
    )
    .await;
    let work = tempfile::tempdir().unwrap();
    let root = work.path().to_path_buf();
    write_app(&root, "good", "target", "team-a", WEB);
    write_app(
        &root,
        "stray",
        "target",
        "default",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: sys\n  namespace: kube-system\n",
    );
    write_app(&root, "ghost", "nowhere", "team-a", WEB);
    write_app(&root, "local", "", "anything", WEB);
    let base = server.base.clone();
    let out = blocking(move || {
        let apps = root.join("apps");
        let failed = wardn(
            &root,
            &[
                "clusters",
                "validate",
                "--apps",
                apps.to_str().unwrap(),
                "--server",
                &base,
                "--token",
                &token,
            ],
        );
        assert!(!failed.status.success(), "{}", text(&failed));
        // Only the good Apps left: valid.
        std::fs::remove_file(apps.join("stray.yaml")).unwrap();
        std::fs::remove_file(apps.join("ghost.yaml")).unwrap();
        let passed = wardn(
            &root,
            &[
                "clusters",
                "validate",
                "--apps",
                apps.to_str().unwrap(),
                "--server",
                &base,
                "--token",
                &token,
            ],
        );
        assert!(passed.status.success(), "{}", text(&passed));
        assert!(
            text(&passed).contains("2 App(s) valid against 1 registered cluster(s)"),
            "{}",
            text(&passed)
        );
        text(&failed)
    })
    .await;
    let lines: Vec<&str> = out.lines().collect();
    let line = |needle: &str| {
        lines
            .iter()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no line with {needle:?} in:\n{out}"))
            .to_string()
    };
    let ghost = line("App default/ghost");
    assert!(
        ghost.contains("ghost.yaml")
            && ghost.contains("spec.destination.cluster")
            && ghost.contains("\"nowhere\" is not registered (registered: target)"),
        "{ghost}"
    );
    let stray_ns = line("stray: spec.destination.namespace");
    assert!(
        stray_ns.contains("stray.yaml") && stray_ns.contains("\"default\""),
        "{stray_ns}"
    );
    let stray_object = line("kube-system");
    assert!(
        stray_object.contains("spec.source (rendered objects)")
            && stray_object.contains("ConfigMap")
            && stray_object.contains("allowed: team-a"),
        "{stray_object}"
    );
    assert!(!out.contains("App default/good"), "{out}");
    assert!(!out.contains("App default/local"), "{out}");
    assert!(out.contains("3 violation(s)"), "{out}");
}

fn kubeconfig_for_token(sim: &common::Sim, token: &str) -> String {
    sim.cluster.kubeconfig_with_token(token)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generate_rbac_writes_minimal_files_that_kubectl_applies() {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{Api, PostParams};

    let sim = common::start(&["team-a", "team-b"]).await;
    let work = tempfile::tempdir().unwrap();
    let root = work.path().to_path_buf();
    write_app(&root, "web", "target", "team-a", WEB);
    write_app(
        &root,
        "ns",
        "",
        "default",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: extra\n",
    );
    let out_dir = root.join("out");
    let (apps, out) = (root.join("apps"), out_dir.clone());
    let printed = blocking(move || {
        let output = wardn(
            &root,
            &[
                "generate",
                "rbac",
                "--apps",
                apps.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ],
        );
        assert!(output.status.success(), "{}", text(&output));
        text(&output)
    })
    .await;
    let target = out_dir.join("wardn-target-rbac.yaml");
    assert!(
        printed.contains(&format!(
            "Apply to cluster \"target\":\n  kubectl apply -f {}\n",
            target.display()
        )),
        "{printed}"
    );
    assert!(
        printed.contains("Apply to the management cluster (local):"),
        "{printed}"
    );
    assert!(!printed.contains("warning:"), "{printed}");
    let yaml = std::fs::read_to_string(&target).unwrap();
    assert!(!yaml.contains('*'), "{yaml}");
    assert!(
        yaml.contains("kind: Role\n")
            && yaml.contains("deployments")
            && yaml.contains("configmaps"),
        "{yaml}"
    );
    let local = std::fs::read_to_string(out_dir.join("rbac.yaml")).unwrap();
    assert!(
        local.contains("kind: ClusterRole\n") && local.contains("namespaces"),
        "{local}"
    );

    // kubectl 1.32 applies the file; the token it yields can do what the App needs, nowhere else.
    let context = sim.cluster.name().to_string();
    let applied = sim.kubectl(
        &[
            "--context",
            &context,
            "apply",
            "-f",
            target.to_str().unwrap(),
        ],
        None,
    );
    assert!(
        applied.contains("role.rbac.authorization.k8s.io/wardn-target"),
        "{applied}"
    );
    let token = sim.service_account_token("wardn").await;
    let client = sim.client_with_token(&token).await;
    let config_map = |ns: &str| -> ConfigMap {
        serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
                                      "metadata": {"name": "probe", "namespace": ns}}))
        .unwrap()
    };
    Api::<ConfigMap>::namespaced(client.clone(), "team-a")
        .create(&PostParams::default(), &config_map("team-a"))
        .await
        .unwrap();
    let outside = Api::<ConfigMap>::namespaced(client, "team-b")
        .create(&PostParams::default(), &config_map("team-b"))
        .await;
    assert!(
        matches!(outside, Err(kube::Error::Api(ref s)) if s.code == 403),
        "{outside:?}"
    );
}

/// A template-routed App: the seed's routing example, labels choosing the cluster.
const ROUTED_BY_ENV: &str =
    r#"'{{ if eq .metadata.labels.env "prod" }}target{{ else }}staging{{ end }}'"#;

/// Writes an App whose destination cluster is `cluster` verbatim (a template) and whose
/// metadata carries `labels`.
fn write_templated_app(root: &Path, name: &str, labels: &str, namespace: &str, manifests: &str) {
    write_app(root, name, "placeholder", namespace, manifests);
    let file = root.join("apps").join(format!("{name}.yaml"));
    let text = std::fs::read_to_string(&file)
        .unwrap()
        .replace(
            "cluster: \"placeholder\"",
            &format!("cluster: {ROUTED_BY_ENV}"),
        )
        .replace(
            &format!("  name: {name}\n"),
            &format!("  name: {name}\n  labels: {labels}\n"),
        );
    std::fs::write(&file, text).unwrap();
}

const SERVICE: &str =
    "apiVersion: v1\nkind: Service\nmetadata:\n  name: api\nspec:\n  ports:\n  - port: 80\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generate_rbac_grants_template_routed_apps_on_every_cluster() {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::Service;
    use kube::api::{Api, PostParams};

    let sim = common::start(&["team-a", "team-b"]).await;
    let work = tempfile::tempdir().unwrap();
    let root = work.path().to_path_buf();
    write_app(&root, "web", "staging", "team-a", WEB);
    write_templated_app(&root, "api", "{env: prod}", "team-b", SERVICE);
    let clusters = root.join("clusters.yaml");
    let declared = |name: &str| {
        format!(
            "apiVersion: cd.wardn.space/v1alpha1\nkind: Cluster\nmetadata: {{name: {name}}}\n\
             spec:\n  server: https://{name}.internal:6443\n  secretRef: {{name: {name}-credentials}}\n"
        )
    };
    std::fs::write(
        &clusters,
        format!("{}---\n{}", declared("target"), declared("eu")),
    )
    .unwrap();
    let out = root.join("out");
    let args = [
        "generate",
        "rbac",
        "--apps",
        root.join("apps").to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--clusters",
        clusters.to_str().unwrap(),
    ]
    .map(str::to_string);
    let run = {
        let (root, args) = (root.clone(), args.clone());
        move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let output = wardn(&root, &args);
            assert!(output.status.success(), "{}", text(&output));
            output
        }
    };
    let output = blocking(run.clone()).await;
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(
        stderr.contains(
            "warning: template-routed App(s) added to all cluster RBAC files: default/api\n  \
             Remove rules for clusters that should not have access.\n"
        ),
        "{stderr}"
    );
    let file = |cluster: &str| out.join(format!("wardn-{cluster}-rbac.yaml"));
    assert!(
        stdout.contains(&format!(
            "Apply to cluster \"target\" (https://target.internal:6443):\n  kubectl apply -f {}\n",
            file("target").display()
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("Apply to cluster \"staging\":\n"),
        "{stdout}"
    );
    let read = |cluster: &str| std::fs::read_to_string(file(cluster)).unwrap();
    // Every cluster's file grants the template-routed App's Services in its namespace; only
    // staging's grants the statically routed Deployment; `eu` has a file though no App names it.
    for cluster in ["target", "staging", "eu"] {
        let yaml = read(cluster);
        assert!(
            yaml.contains("services") && yaml.contains("namespace: team-b"),
            "{cluster}: {yaml}"
        );
        assert_eq!(
            yaml.contains("deployments"),
            cluster == "staging",
            "{cluster}: {yaml}"
        );
    }
    assert!(!out.join("rbac.yaml").exists());

    // The 2nd run writes the same bytes (the files are meant to be kept in Git).
    let first: Vec<String> = ["target", "staging", "eu"].map(read).to_vec();
    blocking(run).await;
    assert_eq!(first, ["target", "staging", "eu"].map(read).to_vec());

    // On the cluster the template resolves to, the file is exactly enough for the App.
    sim.kubectl(&["apply", "-f", file("target").to_str().unwrap()], None);
    let client = sim
        .client_with_token(&sim.service_account_token("wardn").await)
        .await;
    let service: Service = serde_json::from_str(
        &serde_json::to_string(&serde_saphyr::from_str::<Value>(SERVICE).unwrap()).unwrap(),
    )
    .unwrap();
    Api::<Service>::namespaced(client.clone(), "team-b")
        .create(&PostParams::default(), &service)
        .await
        .unwrap();
    let deployment: Deployment = serde_json::from_value(
        serde_json::to_value(serde_saphyr::from_multiple::<Value>(WEB).unwrap()[1].clone())
            .unwrap(),
    )
    .unwrap();
    let refused = Api::<Deployment>::namespaced(client, "team-b")
        .create(&PostParams::default(), &deployment)
        .await;
    assert!(
        matches!(refused, Err(kube::Error::Api(ref s)) if s.code == 403),
        "{refused:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generate_refuses_bad_destinations_and_writes_nothing() {
    let work = tempfile::tempdir().unwrap();
    let root = work.path().to_path_buf();
    write_app(&root, "web", "staging", "team-a", WEB);
    // A clusters file with an http:// server is refused naming the field; `--out` that is a
    // file is an error naming it; neither leaves a file behind.
    let clusters = root.join("clusters.yaml");
    std::fs::write(
        &clusters,
        "apiVersion: cd.wardn.space/v1alpha1\nkind: Cluster\nmetadata: {name: x}\n\
         spec:\n  server: http://x.internal\n  secretRef: {name: x}\n",
    )
    .unwrap();
    let blocker = root.join("blocker");
    std::fs::write(&blocker, "").unwrap();
    let out = root.join("out");
    let apps = root.join("apps");
    let (r, a, c, o, b) = (
        root.clone(),
        apps.clone(),
        clusters.clone(),
        out.clone(),
        blocker.clone(),
    );
    let (bad_clusters, bad_out) = blocking(move || {
        let s = |p: &Path| p.to_str().unwrap().to_string();
        let bad_clusters = wardn(
            &r,
            &[
                "generate",
                "rbac",
                "--apps",
                &s(&a),
                "--out",
                &s(&o),
                "--clusters",
                &s(&c),
            ],
        );
        let bad_out = wardn(
            &r,
            &[
                "generate",
                "bundle",
                "--apps",
                &s(&a),
                "--out",
                &s(&b.join("sub")),
            ],
        );
        (bad_clusters, bad_out)
    })
    .await;
    assert!(!bad_clusters.status.success());
    assert!(
        text(&bad_clusters).contains("spec.server"),
        "{}",
        text(&bad_clusters)
    );
    assert!(!out.exists());
    assert!(!bad_out.status.success());
    assert!(text(&bad_out).contains("blocker"), "{}", text(&bad_out));
    assert!(
        !text(&bad_out).contains("panicked") && !text(&bad_out).contains("stack backtrace"),
        "{}",
        text(&bad_out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_reviews_access_through_the_server() {
    let sim = common::start(&["team-a", "team-b"]).await;
    let server = TestServer::start(None).await;
    let token = server.token().await;
    register(
        &server,
        "admin-c",
        sim.cluster.kubeconfig(),
        sim.cluster.url(),
        &[],
    )
    .await;
    let namespaced = sim.cluster.tokens().namespaced["team-a"].clone();
    register(
        &server,
        "ns-c",
        kubeconfig_for_token(&sim, &namespaced),
        sim.cluster.url(),
        &[],
    )
    .await;
    let work = tempfile::tempdir().unwrap();
    let root = work.path().to_path_buf();
    let both = format!(
        "{WEB}---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\n  namespace: team-b\n"
    );
    write_app(&root, "admin-app", "admin-c", "team-a", &both);
    write_app(&root, "ns-app", "ns-c", "team-a", &both);

    // The API: a review per verb, bad input named, unknown cluster 404.
    let http = reqwest::Client::new();
    let post = |name: &str, body: Value| {
        http.post(server.url(&format!("/api/v1/clusters/{name}/check")))
            .bearer_auth(&token)
            .json(&body)
            .send()
    };
    let response = post(
        "ns-c",
        json!({"resources": [{"resource": "configmaps", "namespace": "team-b", "verbs": ["get", "list"]},
                             {"resource": "configmaps", "namespace": "team-a", "verbs": ["create"]}]}),
    )
    .await
    .unwrap();
    assert_eq!(response.status(), 200);
    let report: Value = response.json().await.unwrap();
    assert_eq!(report["status"], "connected", "{report}");
    assert!(
        report["version"].as_str().unwrap().starts_with('v'),
        "{report}"
    );
    let allowed: Vec<bool> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["allowed"].as_bool().unwrap())
        .collect();
    assert_eq!(allowed, [false, false, true], "{report}");
    let bad = post(
        "ns-c",
        json!({"resources": [{"resource": "configmaps", "verbs": []}]}),
    )
    .await
    .unwrap();
    assert_eq!(bad.status(), 400);
    let bad: Value = bad.json().await.unwrap();
    assert!(
        bad["error"]
            .as_str()
            .unwrap()
            .contains("resources[0].verbs"),
        "{bad}"
    );
    assert_eq!(post("missing", json!({})).await.unwrap().status(), 404);

    // The CLI: the admin token passes, the namespaced token's team-b reviews are denied.
    let base = server.base.clone();
    let cli_token = token.clone();
    let (passed, failed) = blocking(move || {
        let apps = root.join("apps");
        let run = |clusters: &str| {
            wardn(
                &root,
                &[
                    "clusters",
                    "check",
                    "--clusters",
                    clusters,
                    "--apps",
                    apps.to_str().unwrap(),
                    "--server",
                    &base,
                    "--token",
                    &cli_token,
                ],
            )
        };
        (run("admin-c"), run("admin-c,ns-c"))
    })
    .await;
    assert!(passed.status.success(), "{}", text(&passed));
    let passed = text(&passed);
    assert!(
        passed.contains("admin-c") && passed.contains("connected") && !passed.contains("denied:"),
        "{passed}"
    );
    assert!(!failed.status.success(), "{}", text(&failed));
    let failed = text(&failed);
    assert!(
        failed.contains("denied: create core/configmaps in team-b")
            && !failed.contains("apps/deployments")
            && failed.contains("ns-c: 7 access check(s) denied"),
        "{failed}"
    );

    // An unreachable cluster: reported, and the CLI fails naming it.
    let dead = "https://127.0.0.1:1";
    register(
        &server,
        "dead",
        support::server::kubeconfig(dead, "t"),
        dead.into(),
        &[],
    )
    .await;
    let report: Value = post("dead", json!({})).await.unwrap().json().await.unwrap();
    assert_eq!(report["status"], "disconnected", "{report}");
    assert!(
        report["error"]
            .as_str()
            .unwrap()
            .contains("connection refused"),
        "{report}"
    );
    let (base, cli_token) = (server.base.clone(), token.clone());
    let unreachable = blocking(move || {
        let dir = tempfile::tempdir().unwrap();
        wardn(
            dir.path(),
            &[
                "clusters",
                "check",
                "--clusters",
                "dead",
                "--server",
                &base,
                "--token",
                &cli_token,
            ],
        )
    })
    .await;
    assert!(!unreachable.status.success(), "{}", text(&unreachable));
    assert!(
        text(&unreachable).contains("dead: unreachable: connection refused"),
        "{}",
        text(&unreachable)
    );

    let audit: Value = http
        .get(server.url("/api/v1/audit"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let checks: Vec<&Value> = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "cluster.check")
        .collect();
    assert!(checks.len() >= 4, "{audit}");
    assert!(
        checks
            .iter()
            .any(|e| e["outcome"].as_str().unwrap().contains("allowed")),
        "{audit}"
    );
}

const WIDGET_CRD: &str = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n\
metadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n  scope: Namespaced\n  names:\n    \
plural: widgets\n    singular: widget\n    kind: Widget\n  versions:\n  - name: v1\n    served: true\n    \
storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        \
x-kubernetes-preserve-unknown-fields: true\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_finds_the_crds_routed_apps_need_in_the_clusters_discovery() {
    let sim = common::start(&["team-a"]).await;
    let server = TestServer::start(None).await;
    let token = server.token().await;
    register(
        &server,
        "crd-c",
        sim.cluster.kubeconfig(),
        sim.cluster.url(),
        &[],
    )
    .await;
    let work = tempfile::tempdir().unwrap();
    let root = work.path().to_path_buf();
    // A Widget whose CRD no App renders: the cluster must serve it already.
    write_app(
        &root,
        "widgets",
        "crd-c",
        "team-a",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n",
    );

    // The API: a kind needs group/version; a core kind is refused naming the field.
    let http = reqwest::Client::new();
    let bad = http
        .post(server.url("/api/v1/clusters/crd-c/check"))
        .bearer_auth(&token)
        .json(&json!({"kinds": [{"apiVersion": "v1", "kind": "ConfigMap"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    assert!(bad.text().await.unwrap().contains("kinds[0].apiVersion"));

    let (base, cli_token) = (server.base.clone(), token.clone());
    let check = move || {
        let apps = root.join("apps");
        wardn(
            &root,
            &[
                "clusters",
                "check",
                "--clusters",
                "crd-c",
                "--apps",
                apps.to_str().unwrap(),
                "--server",
                &base,
                "--token",
                &cli_token,
            ],
        )
    };
    let missing = blocking(check.clone()).await;
    assert!(!missing.status.success(), "{}", text(&missing));
    let missing = text(&missing);
    assert!(
        missing.contains("  missing: example.com/v1 Widget: example.com/v1 is not served")
            && missing.contains("crd-c: 1 kind(s) not served (CRDs not installed)"),
        "{missing}"
    );

    // Once the CRD is installed the Widget is placed with the discovered scope and reviewed
    // as `widgets` in team-a like any built-in kind.
    sim.kubectl(&["apply", "-f", "-"], Some(WIDGET_CRD));
    let mut served = String::new();
    for _ in 0..50 {
        let output = blocking(check.clone()).await;
        served = text(&output);
        if output.status.success() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(
        served.contains("crd-c") && !served.contains("missing:") && !served.contains("denied:"),
        "{served}"
    );
    let report: Value = http
        .post(server.url("/api/v1/clusters/crd-c/check"))
        .bearer_auth(&token)
        .json(
            &json!({"kinds": [{"apiVersion": "example.com/v1", "kind": "Widget"},
                                {"apiVersion": "example.com/v1", "kind": "Gadget"},
                                {"apiVersion": "nowhere.io/v9", "kind": "Thing"}]}),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let kinds = report["kinds"].as_array().unwrap();
    assert_eq!(kinds[0]["served"], true, "{report}");
    assert_eq!(kinds[0]["resource"], "widgets", "{report}");
    assert_eq!(kinds[0]["namespaced"], true, "{report}");
    assert_eq!(kinds[1]["served"], false, "{report}");
    assert!(
        kinds[1]["reason"]
            .as_str()
            .unwrap()
            .contains("serves no kind Gadget"),
        "{report}"
    );
    assert!(
        kinds[2]["reason"]
            .as_str()
            .unwrap()
            .contains("nowhere.io/v9 is not served"),
        "{report}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bootstrap_derives_kinds_and_namespaces_from_the_apps() {
    use k8s_openapi::api::rbac::v1::Role;
    use kube::api::Api;

    let sim = common::start(&["team-a"]).await;
    let server = TestServer::start(None).await;
    let token = server.token().await;
    let work = tempfile::tempdir().unwrap();
    let root = work.path().to_path_buf();
    write_app(&root, "web", "target", "team-a", WEB);
    write_app(&root, "elsewhere", "other", "team-b", WEB);
    let kubeconfig = sim.kubeconfig.clone();
    let context = sim.cluster.name().to_string();
    let base = server.base.clone();
    let output = blocking(move || {
        let apps = root.join("apps");
        wardn(
            &root,
            &[
                "clusters",
                "bootstrap",
                "--server",
                &base,
                "--token",
                &token,
                "--kubeconfig",
                kubeconfig.to_str().unwrap(),
                "--context",
                &context,
                "--name",
                "target",
                "--apps",
                apps.to_str().unwrap(),
            ],
        )
    })
    .await;
    assert!(output.status.success(), "{}", text(&output));
    let view = server.registry.get("target").await.unwrap();
    assert_eq!(view.namespaces, ["team-a"]);
    let admin = sim.cluster.client().await.unwrap();
    let role = Api::<Role>::namespaced(admin, "team-a")
        .get("wardn-target")
        .await
        .unwrap();
    let rules = serde_json::to_value(&role.rules).unwrap();
    assert_eq!(
        rules,
        json!([
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": wardn::clusters::rbac::VERBS},
            {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": wardn::clusters::rbac::VERBS},
        ])
    );
}

/// CRDs redeclaring built-in kinds as Namespaced (issue #12), a cluster-admin binding and
/// cluster-scoped built-ins of 1.32.
const ATTACK: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: customresourcedefinitions.apiextensions.k8s.io
spec:
  group: apiextensions.k8s.io
  scope: Namespaced
  names: {kind: CustomResourceDefinition, plural: customresourcedefinitions}
  versions: [{name: v1, served: true, storage: true}]
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: clusterrolebindings.rbac.authorization.k8s.io
spec:
  group: rbac.authorization.k8s.io
  scope: Namespaced
  names: {kind: ClusterRoleBinding, plural: clusterrolebindings}
  versions: [{name: v1, served: true, storage: true}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: pwn
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: default, namespace: team-a}]
"#;

const CLUSTER_SCOPED_BUILTINS: &str = r#"---
apiVersion: storage.k8s.io/v1beta1
kind: VolumeAttributesClass
metadata:
  name: fast
driverName: csi.example.com
---
apiVersion: networking.k8s.io/v1beta1
kind: ServiceCIDR
metadata:
  name: extra
spec: {cidrs: [10.100.0.0/16]}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validate_reports_redeclaring_crds_and_cluster_scoped_builtins() {
    let sim = common::start(&["team-a"]).await;
    let server = TestServer::start(None).await;
    let token = server.token().await;
    register(
        &server,
        "target",
        sim.cluster.kubeconfig(),
        sim.cluster.url(),
        &["team-a"],
    )
    .await;
    let work = tempfile::tempdir().unwrap();
    let root = work.path().to_path_buf();
    write_app(
        &root,
        "restricted",
        "target",
        "team-a",
        &format!("{ATTACK}{CLUSTER_SCOPED_BUILTINS}"),
    );
    write_app(&root, "open", "", "anything", ATTACK);
    let base = server.base.clone();
    let out = blocking(move || {
        let apps = root.join("apps");
        let failed = wardn(
            &root,
            &[
                "clusters",
                "validate",
                "--apps",
                apps.to_str().unwrap(),
                "--server",
                &base,
                "--token",
                &token,
            ],
        );
        assert!(!failed.status.success(), "{}", text(&failed));
        text(&failed)
    })
    .await;
    let has = |app: &str, needles: &[&str]| {
        assert!(
            out.lines()
                .any(|l| l.contains(&format!("App default/{app}:"))
                    && needles.iter().all(|n| l.contains(n))),
            "no line of {app} with {needles:?} in:\n{out}"
        );
    };
    for app in ["restricted", "open"] {
        for crd in [
            "customresourcedefinitions.apiextensions.k8s.io",
            "clusterrolebindings.rbac.authorization.k8s.io",
        ] {
            has(
                app,
                &[
                    "spec.source (rendered objects)",
                    &format!("CustomResourceDefinition {crd} defines"),
                    "built-in group",
                ],
            );
        }
    }
    for object in [
        "ClusterRoleBinding pwn (rbac.authorization.k8s.io/v1)",
        "VolumeAttributesClass fast (storage.k8s.io/v1beta1)",
        "ServiceCIDR extra (networking.k8s.io/v1beta1)",
        "CustomResourceDefinition customresourcedefinitions.apiextensions.k8s.io (apiextensions.k8s.io/v1)",
    ] {
        has(
            "restricted",
            &[
                object,
                "cluster-scoped objects are not allowed on cluster target",
            ],
        );
    }
    assert!(out.contains("9 violation(s)"), "{out}");
}

/// Named targets: `generate rbac` routes each target of an App to its own cluster's file (in
/// the target's namespace), the file applied to kubesim is exactly enough for that target, and
/// `validate --full` prints one routing row per target.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generate_rbac_and_validate_route_each_target() {
    use k8s_openapi::api::apps::v1::Deployment;
    use kube::api::{Api, PostParams};

    let sim = common::start(&["team-a", "team-b"]).await;
    let work = tempfile::tempdir().unwrap();
    let root = work.path().to_path_buf();
    write_app(&root, "web", "staging", "team-a", WEB);
    let file = root.join("apps").join("web.yaml");
    let targeted = std::fs::read_to_string(&file).unwrap()
        + "  targets:\n    staging: {}\n    prod: {cluster: prod, namespace: team-b}\n";
    std::fs::write(&file, targeted).unwrap();
    write_app(&root, "api", "eu", "team-a", SERVICE);
    let out = root.join("out");
    let args = [
        "generate",
        "rbac",
        "--apps",
        root.join("apps").to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]
    .map(str::to_string);
    let validate = [
        "validate",
        "--apps",
        root.join("apps").to_str().unwrap(),
        "--full",
        "--offline",
    ]
    .map(str::to_string);
    let (generated, validated) = {
        let root = root.clone();
        blocking(move || {
            let run = |args: &[String]| {
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                wardn(&root, &args)
            };
            (run(&args), run(&validate))
        })
        .await
    };
    assert!(generated.status.success(), "{}", text(&generated));
    let read = |cluster: &str| {
        std::fs::read_to_string(out.join(format!("wardn-{cluster}-rbac.yaml"))).unwrap()
    };
    let (prod, staging, eu) = (read("prod"), read("staging"), read("eu"));
    assert!(
        prod.contains("deployments") && prod.contains("namespace: team-b"),
        "{prod}"
    );
    assert!(!prod.contains("namespace: team-a"), "{prod}");
    assert!(
        staging.contains("deployments") && staging.contains("namespace: team-a"),
        "{staging}"
    );
    assert!(!staging.contains("namespace: team-b"), "{staging}");
    assert!(
        !eu.contains("deployments") && eu.contains("services"),
        "{eu}"
    );

    assert!(validated.status.success(), "{}", text(&validated));
    let table: Vec<Vec<String>> = text(&validated)
        .lines()
        .skip_while(|l| !l.starts_with("APP "))
        .take_while(|l| !l.is_empty() && !l.starts_with("note:"))
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect();
    assert_eq!(
        table,
        [
            ["APP", "CLUSTER", "ROUTE", "FILE"],
            ["default/api", "eu", "static", "api.yaml"],
            ["default/web:prod", "prod", "static", "web.yaml"],
            ["default/web:staging", "staging", "static", "web.yaml"],
        ]
        .map(|row| row.map(str::to_string).to_vec())
        .to_vec(),
        "{}",
        text(&validated)
    );

    // prod's file, applied: the prod target's Deployment in team-b may be created, the
    // staging target's namespace is out of reach.
    sim.kubectl(
        &[
            "apply",
            "-f",
            out.join("wardn-prod-rbac.yaml").to_str().unwrap(),
        ],
        None,
    );
    let client = sim
        .client_with_token(&sim.service_account_token("wardn").await)
        .await;
    let deployment: Deployment = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]}
            }
        }
    }))
    .unwrap();
    Api::<Deployment>::namespaced(client.clone(), "team-b")
        .create(&PostParams::default(), &deployment)
        .await
        .unwrap();
    let refused = Api::<Deployment>::namespaced(client, "team-a")
        .create(&PostParams::default(), &deployment)
        .await;
    assert!(
        matches!(refused, Err(kube::Error::Api(ref s)) if s.code == 403),
        "{refused:?}"
    );
}
