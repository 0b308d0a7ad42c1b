//! Destination templates against the real thing: kubectl's `-o go-template` runs Go's
//! text/template, so every template of the shared subset (if/else if/else, eq/ne/and/or/not,
//! printf, index, trim markers, literals) must print exactly what kubectl prints for the same
//! object; and App files with a bad template are refused naming the file and the field.

mod common;
mod support;

use wardn::app::template::Template;

/// Templates both engines understand; fields all exist (Go prints `<no value>` for a missing
/// field, wardn prints nothing, as the README says).
const SHARED: [&str; 12] = [
    r#"{{ if eq .metadata.labels.env "prod" }}prod{{ else }}staging{{ end }}"#,
    r#"{{ if eq .metadata.labels.env "qa" "prod" }}gated{{ end }}"#,
    r#"{{- if ne .metadata.labels.env "prod" -}} dev {{- else -}} prod {{- end -}}"#,
    r#"{{ if eq .metadata.labels.env "dev" }}a{{ else if eq .metadata.labels.region "eu-west" }}b{{ else }}c{{ end }}"#,
    r#"{{ if and .metadata.labels.env (not .metadata.labels.paused) }}on{{ end }}"#,
    r#"{{ or .metadata.labels.paused .metadata.labels.region }}"#,
    r#"{{ printf "%s-%s" .metadata.labels.env .metadata.labels.region }}"#,
    r#"{{ printf "%q" .metadata.name }}"#,
    r#"{{ index .metadata.labels "region" }}"#,
    r#"{{ index .data "replicas" | printf "r%s" }}"#,
    r#"static-{{ .metadata.name }}-{{ .metadata.namespace }}"#,
    r#"{{ if eq (index .metadata.labels "env") "prod" }}{{ `raw` }}{{ end }}"#,
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn templates_print_what_kubectl_go_template_prints() {
    let sim = common::start(&["team"]).await;
    sim.kubectl(
        &["apply", "-f", "-"],
        Some(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  namespace: team\n\
             \x20 labels:\n    env: prod\n    region: eu-west\n    paused: \"\"\ndata:\n  replicas: \"3\"\n",
        ),
    );
    let object: serde_json::Value = serde_json::from_str(&sim.kubectl(
        &["get", "configmap", "web", "-n", "team", "-o", "json"],
        None,
    ))
    .unwrap();
    for template in SHARED {
        let go = sim.kubectl(
            &[
                "get",
                "configmap",
                "web",
                "-n",
                "team",
                "-o",
                &format!("go-template={template}"),
            ],
            None,
        );
        let ours = Template::parse(template).unwrap().render(&object).unwrap();
        assert_eq!(ours, go, "{template}");
    }
}

#[test]
fn app_files_with_a_bad_template_name_the_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let app = |cluster: &str| {
        format!(
            "apiVersion: cd.wardn.space/v1alpha1\nkind: App\nmetadata:\n  name: web\n  labels:\n    env: prod\n\
             spec:\n  source:\n    type: Directory\n    directory:\n      path: /srv\n\
             \x20 destination:\n    cluster: '{cluster}'\n    namespace: shop\n"
        )
    };
    std::fs::write(dir.path().join("web.yaml"), app("{{ lookup .metadata }}")).unwrap();
    let error = wardn::app::files::load_dir(dir.path())
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("web.yaml (document 1): spec.destination.cluster: template column 1: function \"lookup\" not defined"),
        "{error}"
    );
    std::fs::write(
        dir.path().join("web.yaml"),
        app(r#"{{ if eq .metadata.labels.env "prod" }}prod{{ else }}staging{{ end }}"#),
    )
    .unwrap();
    let apps = wardn::app::files::load_dir(dir.path()).unwrap();
    assert_eq!(apps[0].spec.destination.cluster, "prod");
}

fn write_routing_apps(dir: &std::path::Path) {
    let app = |name: &str, labels: &str, cluster: &str| {
        format!(
            "apiVersion: cd.wardn.space/v1alpha1\nkind: App\nmetadata:\n  name: {name}\n  namespace: team\n  labels: {labels}\n\
             spec:\n  source:\n    type: Directory\n    directory:\n      path: /srv/{name}\n\
             \x20 destination:\n    cluster: '{cluster}'\n    namespace: shop\n"
        )
    };
    let by_env = r#"{{ if eq .metadata.labels.env "prod" }}prod{{ else }}staging{{ end }}"#;
    std::fs::write(
        dir.join("a-routed.yaml"),
        app("routed", "{env: prod}", by_env),
    )
    .unwrap();
    std::fs::write(dir.join("b-static.yaml"), app("fixed", "{}", "staging")).unwrap();
    std::fs::write(dir.join("c-local.yaml"), app("home", "{}", "")).unwrap();
    std::fs::write(
        dir.join("d-bad.yaml"),
        app("bad", "{}", "{{ range .x }}{{ end }}"),
    )
    .unwrap();
}

fn wardn_validate(dir: &std::path::Path, extra: &[&str]) -> (bool, String) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_wardn"))
        .arg("validate")
        .arg("--apps")
        .arg(dir)
        .args(extra)
        .env("WARDN_CONFIG_DIR", dir.join("no-config"))
        .env_remove("WARDN_SERVER")
        .env_remove("WARDN_TOKEN")
        .env_remove("WARDN_APPS_DIR")
        .output()
        .unwrap();
    (
        output.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
    )
}

/// `wardn validate --full` offline: each App's route, the bad template named with its file,
/// field and column, the routing table, a non-zero exit.
#[test]
fn validate_prints_the_routing_table_and_names_bad_templates() {
    let dir = tempfile::tempdir().unwrap();
    write_routing_apps(dir.path());
    let (ok, out) = wardn_validate(dir.path(), &["--full"]);
    assert!(!ok, "{out}");
    assert!(
        out.contains("d-bad.yaml (document 1): spec.destination.cluster: template column 1: {{range}} is not supported"),
        "{out}"
    );
    assert!(
        out.contains("✓ ") && out.contains("App team/routed → prod (template)"),
        "{out}"
    );
    let table: Vec<Vec<&str>> = out
        .lines()
        .skip_while(|l| !l.starts_with("APP "))
        .take_while(|l| !l.is_empty() && !l.starts_with("note:"))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        table,
        [
            vec!["APP", "CLUSTER", "ROUTE", "FILE"],
            vec!["team/routed", "prod", "template", "a-routed.yaml"],
            vec!["team/fixed", "staging", "static", "b-static.yaml"],
            vec!["team/home", "local", "management", "c-local.yaml"],
        ],
        "{out}"
    );
    assert!(out.contains("registered clusters not checked"), "{out}");
    assert!(out.contains("error: 1 problem(s)"), "{out}");
}

/// With a server configured, destinations are checked against its registered clusters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validate_checks_destinations_against_the_server() {
    let server = support::server::TestServer::start(None).await;
    let token = server.token().await;
    let dir = tempfile::tempdir().unwrap();
    write_routing_apps(dir.path());
    std::fs::remove_file(dir.path().join("d-bad.yaml")).unwrap();
    let base = server.base.clone();
    let path = dir.path().to_path_buf();
    let (ok, out) = tokio::task::spawn_blocking(move || {
        wardn_validate(&path, &["--server", &base, "--token", &token])
    })
    .await
    .unwrap();
    assert!(!ok, "{out}");
    assert!(
        out.contains(
            "App team/routed: spec.destination.cluster: cluster \"prod\" is not registered"
        ),
        "{out}"
    );
    assert!(
        out.contains("cluster \"staging\" is not registered"),
        "{out}"
    );
    assert!(
        out.contains("✓ ") && out.contains("App team/home → local (management)"),
        "{out}"
    );
    assert!(out.contains("error: 2 problem(s)"), "{out}");
}

/// Named targets: `validate` checks each target's cluster against the server's registered
/// clusters, naming `spec.targets.NAME.cluster`; a bad target list is refused naming its field.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validate_names_the_target_whose_cluster_is_not_registered() {
    let server = support::server::TestServer::start(None).await;
    let token = server.token().await;
    let dir = tempfile::tempdir().unwrap();
    let app = |name: &str, targets: &str| {
        format!(
            "apiVersion: cd.wardn.space/v1alpha1\nkind: App\nmetadata: {{name: {name}, namespace: team}}\n\
             spec:\n  source: {{type: Directory, directory: {{path: /srv}}}}\n\
             \x20 destination: {{namespace: shop}}\n  targets: {targets}\n"
        )
    };
    std::fs::write(
        dir.path().join("multi.yaml"),
        app("multi", "{home: {}, eu: {cluster: prod-eu}}"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("twice.yaml"),
        app("twice", "{a: {}, b: {}}"),
    )
    .unwrap();
    let base = server.base.clone();
    let path = dir.path().to_path_buf();
    let (ok, out) = tokio::task::spawn_blocking(move || {
        wardn_validate(&path, &["--full", "--server", &base, "--token", &token])
    })
    .await
    .unwrap();
    assert!(!ok, "{out}");
    assert!(
        out.contains(
            "App team/multi:eu: spec.targets.eu.cluster: cluster \"prod-eu\" is not registered"
        ),
        "{out}"
    );
    assert!(
        out.contains("App team/multi:home → local (management)"),
        "{out}"
    );
    assert!(
        out.contains("twice.yaml (document 1): spec.targets.b.cluster: targets a and b both deploy to cluster local, namespace shop"),
        "{out}"
    );
    assert!(out.contains("error: 2 problem(s)"), "{out}");
}
