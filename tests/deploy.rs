//! The install manifests in `deploy/`: wardn renders its own install exactly as
//! `kubectl kustomize` (v5.5.0) does; kube-apiserver's dry-run (kubesim, through the real
//! kubectl 1.32) accepts it; its CRD is the one `wardn crd` prints; its workloads are hardened
//! and name only environment variables wardn reads; and its RBAC is enough for wardn to run
//! on the management cluster with the ServiceAccount's own token (an App resource is reconciled
//! and its status written), and no more (other namespaces' Secrets are forbidden).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use wardn::daemon::ServeOptions;
use wardn::seal::Sealer;
use wardn::server::Server;

const WARDN: &str = env!("CARGO_BIN_EXE_wardn");

/// The installs a user applies (`deploy/core` is only their shared part).
const INSTALLS: [&str; 3] = ["default", "split-postgres", "ha"];

fn deploy_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("deploy")
        .join(name)
}

fn stdout_of(command: &mut Command) -> String {
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{command:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn wardn_render(name: &str) -> String {
    stdout_of(Command::new(WARDN).arg("render").arg(deploy_dir(name)))
}

fn documents(yaml: &str) -> Vec<Value> {
    serde_saphyr::from_multiple::<Value>(yaml)
        .unwrap()
        .into_iter()
        .filter(|doc| !doc.is_null())
        .collect()
}

#[test]
fn wardn_renders_its_install_as_kubectl_kustomize_does() {
    for name in INSTALLS {
        let ours = wardn_render(name);
        let reference = stdout_of(
            Command::new(common::KUBECTL)
                .arg("kustomize")
                .arg(deploy_dir(name)),
        );
        assert_eq!(ours, reference, "deploy/{name}");
    }
}

#[test]
fn generate_bundle_writes_the_install_as_kubectl_kustomize_renders_it() {
    let work = tempfile::tempdir().unwrap();
    let apps = work.path().join("apps");
    std::fs::create_dir_all(apps.join("src")).unwrap();
    std::fs::write(
        apps.join("src/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n",
    )
    .unwrap();
    std::fs::write(
        apps.join("local.yaml"),
        format!(
            "apiVersion: cd.wardn.space/v1alpha1\nkind: App\nmetadata:\n  name: cm\nspec:\n  \
             source:\n    type: Directory\n    directory:\n      path: {}\n  destination:\n    \
             namespace: team-a\n",
            apps.join("src").display()
        ),
    )
    .unwrap();
    for (variant, install) in [("default", "default"), ("split-postgres", "split-postgres")] {
        let out = work.path().join(variant);
        let printed = stdout_of(
            Command::new(WARDN)
                .args(["generate", "bundle", "--variant", variant, "--apps"])
                .arg(&apps)
                .arg("--out")
                .arg(&out),
        );
        let reference = stdout_of(
            Command::new(common::KUBECTL)
                .arg("kustomize")
                .arg(deploy_dir(install)),
        );
        let bundle = std::fs::read_to_string(out.join("wardn.yaml")).unwrap();
        assert_eq!(bundle, reference, "deploy/{install}");
        let rbac = std::fs::read_to_string(out.join("rbac.yaml")).unwrap();
        assert!(rbac.contains("configmaps"), "{rbac}");
        assert!(
            printed.find("wardn.yaml") < printed.find("rbac.yaml"),
            "the install comes first: {printed}"
        );
    }
}

#[test]
fn the_installed_crd_is_the_one_wardn_prints() {
    let printed = stdout_of(Command::new(WARDN).arg("crd"));
    let installed = std::fs::read_to_string(deploy_dir("core").join("crd.yaml")).unwrap();
    assert_eq!(
        installed, printed,
        "deploy/core/crd.yaml is stale: run `wardn crd > deploy/core/crd.yaml`"
    );
}

/// Every Deployment runs as non-root with a read-only root filesystem and no privilege
/// escalation, is probed on the health route, and sets only variables wardn's sources read.
#[test]
fn install_workloads_are_hardened_and_configured_with_known_variables() {
    let sources = wardn_source_text();
    for name in INSTALLS {
        let deployments: Vec<Value> = documents(&wardn_render(name))
            .into_iter()
            .filter(|doc| doc["kind"] == "Deployment")
            .collect();
        assert!(!deployments.is_empty(), "deploy/{name} has no Deployment");
        for deployment in deployments {
            let what = format!("deploy/{name} {}", deployment["metadata"]["name"]);
            let pod = &deployment["spec"]["template"]["spec"];
            assert_eq!(pod["securityContext"]["runAsNonRoot"], true, "{what}");
            assert_eq!(pod["serviceAccountName"], "wardn", "{what}");
            for container in pod["containers"].as_array().unwrap() {
                let security = &container["securityContext"];
                assert_eq!(security["readOnlyRootFilesystem"], true, "{what}");
                assert_eq!(security["allowPrivilegeEscalation"], false, "{what}");
                assert_eq!(security["capabilities"]["drop"][0], "ALL", "{what}");
                for probe in ["readinessProbe", "livenessProbe"] {
                    assert_eq!(
                        container[probe]["httpGet"]["path"], "/api/v1/health",
                        "{what} {probe}"
                    );
                }
                for variable in container["env"].as_array().unwrap() {
                    let variable = variable["name"].as_str().unwrap();
                    assert!(
                        sources.contains(&format!("\"{variable}\"")),
                        "{what} sets {variable}, which wardn does not read"
                    );
                }
            }
        }
    }
}

/// All of `src/`, where every environment variable wardn reads is named as a string literal.
fn wardn_source_text() -> String {
    fn walk(dir: &Path, text: &mut String) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, text);
            } else if path.extension().is_some_and(|e| e == "rs") {
                text.push_str(&std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    let mut text = String::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut text,
    );
    text
}

/// Polls `check` until it holds (two minutes at most).
async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    for _ in 0..1200 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("timed out waiting for {what}");
}

/// `kubectl apply --dry-run=server` accepts each install; applied for real, the
/// ServiceAccount's token runs wardn against the management cluster: an App resource is
/// deployed (with the extra Role the README says local Apps need) and its status and Events
/// written, while Secrets outside wardn's namespace stay forbidden.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_install_rbac_is_enough_to_run_wardn_and_no_more() {
    let sim = common::start(&["wardn", "team", "staging"]).await;
    for name in INSTALLS {
        let dry_run = sim.kubectl(
            &["apply", "--dry-run=server", "-f", "-"],
            Some(&wardn_render(name)),
        );
        assert!(
            dry_run.contains("deployment.apps/wardn") && dry_run.contains("(server dry run)"),
            "deploy/{name}: {dry_run}"
        );
    }
    sim.kubectl(&["apply", "-f", "-"], Some(&wardn_render("default")));
    sim.kubectl(
        &[
            "wait",
            "--for=condition=Established",
            "crd/apps.cd.wardn.space",
            "crd/clusters.cd.wardn.space",
            "--timeout=20s",
        ],
        None,
    );
    // What the README tells users to add for Apps deployed to the management cluster itself,
    // and a token Secret standing in for the Pod's projected token.
    sim.kubectl(
        &["apply", "-f", "-"],
        Some(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: local-apps\n  namespace: staging\n\
             rules:\n- apiGroups: [\"\"]\n  resources: [\"configmaps\"]\n  verbs: [\"get\", \"list\", \"watch\", \"create\", \"update\", \"patch\", \"delete\"]\n\
             ---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: local-apps\n  namespace: staging\n\
             roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: local-apps\n\
             subjects:\n- kind: ServiceAccount\n  name: wardn\n  namespace: wardn\n\
             ---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: wardn-token\n  namespace: wardn\n\
             \x20 annotations:\n    kubernetes.io/service-account.name: wardn\ntype: kubernetes.io/service-account-token\n",
        ),
    );
    let token = sim.service_account_token("wardn").await;
    let work = tempfile::tempdir().unwrap();
    let kubeconfig = work.path().join("wardn-sa.kubeconfig");
    std::fs::write(&kubeconfig, sim.cluster.kubeconfig_with_token(&token)).unwrap();

    // The ServiceAccount may read wardn's own Secrets and no one else's.
    let as_wardn = |args: &[&str]| {
        Command::new(common::KUBECTL)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(args)
            .output()
            .unwrap()
    };
    assert!(
        as_wardn(&["get", "secrets", "-n", "wardn"])
            .status
            .success()
    );
    // Replicas of deploy/ha hold Leases in wardn's namespace, and only there.
    let can_i = |namespace: &str| {
        String::from_utf8_lossy(
            &as_wardn(&["auth", "can-i", "update", "leases", "-n", namespace]).stdout,
        )
        .trim()
        .to_string()
    };
    assert_eq!(can_i("wardn"), "yes");
    assert_eq!(can_i("team"), "no");
    let forbidden = as_wardn(&["get", "secrets", "-n", "team"]);
    assert!(
        String::from_utf8_lossy(&forbidden.stderr).contains("Forbidden"),
        "{forbidden:?}"
    );

    let source = work.path().join("source");
    std::fs::create_dir_all(&source).unwrap();
    std::fs::write(
        source.join("configmap.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: installed\ndata:\n  k: v\n",
    )
    .unwrap();
    // A destination cluster declared as a Cluster resource beside its Secret in wardn's
    // namespace (here the same kubesim cluster).
    sim.kubectl(
        &["apply", "-f", "-"],
        Some(&format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: edge-credentials\n  namespace: wardn\n\
             stringData:\n  kubeconfig: |\n{}\n---\napiVersion: cd.wardn.space/v1alpha1\nkind: Cluster\n\
             metadata:\n  name: edge\n  namespace: wardn\nspec:\n  server: {}\n  secretRef: {{name: edge-credentials}}\n",
            sim.cluster
                .kubeconfig()
                .lines()
                .map(|line| format!("    {line}"))
                .collect::<Vec<_>>()
                .join("\n"),
            sim.cluster.url()
        )),
    );
    let options = ServeOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: work.path().join("data"),
        admin_password: Some("correct horse battery staple".into()),
        management_kubeconfig: Some(kubeconfig.clone()),
        cluster_resources_namespace: Some("wardn".into()),
        probe_interval: Duration::from_secs(3600),
        probe_timeout: Duration::from_secs(5),
        ..ServeOptions::default()
    };
    let server = Server::bind(options, Sealer::new(&[7u8; 32], None))
        .await
        .unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(server.run(async move {
        let _ = stopped.await;
    }));
    sim.kubectl(
        &["apply", "-f", "-"],
        Some(&format!(
            "apiVersion: cd.wardn.space/v1alpha1\nkind: App\nmetadata:\n  name: web\n  namespace: team\n\
             spec:\n  source:\n    type: Directory\n    directory:\n      path: {}\n\
             \x20 destination:\n    namespace: staging\n  syncPolicy:\n    automated: true\n",
            source.display()
        )),
    );
    let app = || {
        sim.cluster
            .get_object("cd.wardn.space/v1alpha1", "App", Some("team"), "web")
            .unwrap_or(Value::Null)
    };
    eventually("the App's status Synced", || {
        app()["status"]["phase"] == "Synced"
    })
    .await;
    assert!(
        sim.cluster
            .get_object("v1", "ConfigMap", Some("staging"), "installed")
            .is_some()
    );
    eventually("an Event on the App", || {
        let events = sim.kubectl(&["get", "events", "-n", "team", "-o", "json"], None);
        events.contains("\"name\": \"web\"")
    })
    .await;
    // The Cluster resource was read, its Secret used and its status written.
    let edge = sim
        .cluster
        .get_object("cd.wardn.space/v1alpha1", "Cluster", Some("wardn"), "edge")
        .unwrap_or(Value::Null);
    assert_eq!(edge["status"]["registered"], true, "{edge}");
    let _ = stop.send(());
    task.await.unwrap().unwrap();
}
