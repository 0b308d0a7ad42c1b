//! Destination templates against the real thing: kubectl's `-o go-template` runs Go's
//! text/template, so every template of the shared subset (if/else if/else, eq/ne/and/or/not,
//! printf, index, trim markers, literals) must print exactly what kubectl prints for the same
//! object; and App files with a bad template are refused naming the file and the field.

mod common;

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
