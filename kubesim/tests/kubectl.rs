//! Conformance: the real kubectl 1.32 against kubesim, asserting the resulting objects.

mod common;

use common::{Env, yaml};
use serde_json::Value;

const CONFIGMAP: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: web
  labels: {app: web}
data:
  a: \"1\"
";

const DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: nginx:1.25
        ports: [{containerPort: 80}]
";

#[tokio::test]
async fn apply_creates_then_updates() {
    let env = Env::start().await;
    let file = env.write("cm.yaml", CONFIGMAP);
    let out = env
        .kubectl(&["apply", "-f", file.to_str().unwrap()])
        .await
        .ok();
    assert!(out.stdout.contains("configmap/web created"), "{out:?}");
    let cm = env
        .cluster
        .get_object("v1", "ConfigMap", Some("default"), "web")
        .unwrap();
    assert_eq!(cm["data"]["a"], "1");
    let last_applied =
        cm["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .as_str()
            .unwrap();
    assert!(last_applied.contains("\"a\":\"1\""));
    let rv1: u64 = cm["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();

    env.write("cm.yaml", &CONFIGMAP.replace("a: \"1\"", "b: \"2\""));
    let out = env
        .kubectl(&["apply", "-f", file.to_str().unwrap()])
        .await
        .ok();
    assert!(out.stdout.contains("configmap/web configured"), "{out:?}");
    let cm = env
        .cluster
        .get_object("v1", "ConfigMap", Some("default"), "web")
        .unwrap();
    assert_eq!(
        cm["data"].get("a"),
        None,
        "client-side apply prunes the removed key"
    );
    assert_eq!(cm["data"]["b"], "2");
    let rv2: u64 = cm["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(rv2 > rv1);
    let managers: Vec<&str> = cm["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["manager"].as_str())
        .collect();
    assert!(
        managers.contains(&"kubectl-client-side-apply"),
        "{managers:?}"
    );
}

#[tokio::test]
async fn server_side_apply_creates_updates_conflicts_and_forces() {
    let env = Env::start().await;
    let file = env.write("deploy.yaml", DEPLOYMENT);
    let path = file.to_str().unwrap();
    env.kubectl(&["apply", "--server-side", "-f", path])
        .await
        .ok();
    let d = env
        .cluster
        .get_object("apps/v1", "Deployment", Some("default"), "web")
        .unwrap();
    assert_eq!(d["spec"]["replicas"], 2);
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"], "IfNotPresent",
        "defaulted"
    );
    assert_eq!(d["metadata"]["managedFields"][0]["manager"], "kubectl");
    assert_eq!(d["metadata"]["managedFields"][0]["operation"], "Apply");

    // Update by the same manager.
    env.write(
        "deploy.yaml",
        &DEPLOYMENT.replace("nginx:1.25", "nginx:1.26"),
    );
    env.kubectl(&["apply", "--server-side", "-f", path])
        .await
        .ok();
    let d = env
        .cluster
        .get_object("apps/v1", "Deployment", Some("default"), "web")
        .unwrap();
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.26"
    );
    assert_eq!(d["metadata"]["generation"], 2);

    // Another manager changing replicas conflicts...
    let other = env.write(
        "other.yaml",
        &DEPLOYMENT
            .replace("replicas: 2", "replicas: 5")
            .replace("nginx:1.25", "nginx:1.26"),
    );
    let other = other.to_str().unwrap();
    let out = env
        .kubectl(&[
            "apply",
            "--server-side",
            "--field-manager",
            "other",
            "-f",
            other,
        ])
        .await;
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("conflict with \"kubectl\""), "{out:?}");
    assert!(out.stderr.contains(".spec.replicas"), "{out:?}");
    let d = env
        .cluster
        .get_object("apps/v1", "Deployment", Some("default"), "web")
        .unwrap();
    assert_eq!(
        d["spec"]["replicas"], 2,
        "a conflicting apply changes nothing"
    );

    // ...unless forced, which moves ownership.
    env.kubectl(&[
        "apply",
        "--server-side",
        "--field-manager",
        "other",
        "--force-conflicts",
        "-f",
        other,
    ])
    .await
    .ok();
    let d = env
        .cluster
        .get_object("apps/v1", "Deployment", Some("default"), "web")
        .unwrap();
    assert_eq!(d["spec"]["replicas"], 5);
    let entries = d["metadata"]["managedFields"].as_array().unwrap();
    let owner_of_replicas: Vec<&str> = entries
        .iter()
        .filter(|e| e["fieldsV1"]["f:spec"].get("f:replicas").is_some())
        .filter_map(|e| e["manager"].as_str())
        .collect();
    assert_eq!(owner_of_replicas, vec!["other"]);
}

#[tokio::test]
async fn diff_client_and_server_side() {
    let env = Env::start().await;
    let file = env.write("deploy.yaml", DEPLOYMENT);
    let path = file.to_str().unwrap();
    env.kubectl(&["apply", "-f", path]).await.ok();
    let before = env
        .cluster
        .get_object("apps/v1", "Deployment", Some("default"), "web")
        .unwrap();

    let same = env.kubectl(&["diff", "-f", path]).await;
    assert_eq!(same.code, 0, "no diff for the applied manifest: {same:?}");

    env.write(
        "deploy.yaml",
        &DEPLOYMENT.replace("replicas: 2", "replicas: 3"),
    );
    let changed = env.kubectl(&["diff", "-f", path]).await;
    assert_eq!(changed.code, 1, "{changed:?}");
    assert!(
        changed.stdout.contains("-  replicas: 2") && changed.stdout.contains("+  replicas: 3"),
        "{changed:?}"
    );

    let server = env
        .kubectl(&["diff", "--server-side", "--force-conflicts", "-f", path])
        .await;
    assert_eq!(server.code, 1, "{server:?}");
    assert!(server.stdout.contains("+  replicas: 3"), "{server:?}");

    let after = env
        .cluster
        .get_object("apps/v1", "Deployment", Some("default"), "web")
        .unwrap();
    assert_eq!(after["spec"]["replicas"], 2, "diff never writes");
    assert_eq!(
        after["metadata"]["generation"],
        before["metadata"]["generation"]
    );
}

#[tokio::test]
async fn get_with_label_selector_and_yaml_output() {
    let env = Env::start().await;
    let file = env.write(
        "cms.yaml",
        &format!(
            "{CONFIGMAP}---\n{}",
            CONFIGMAP
                .replace("name: web", "name: db")
                .replace("app: web", "app: db")
        ),
    );
    env.kubectl(&["apply", "-f", file.to_str().unwrap()])
        .await
        .ok();
    let out = env
        .kubectl(&["get", "configmaps", "-l", "app=web", "-o", "name"])
        .await
        .ok();
    assert_eq!(out.stdout.trim(), "configmap/web");
    let out = env
        .kubectl(&["get", "cm", "-l", "app in (web,db)", "-o", "name"])
        .await
        .ok();
    assert_eq!(out.stdout.lines().count(), 2, "{out:?}");
    let out = env
        .kubectl(&["get", "cm", "-l", "app!=web", "-o", "name"])
        .await
        .ok();
    assert!(out.stdout.contains("configmap/db") && !out.stdout.contains("configmap/web"));

    let out = env
        .kubectl(&["get", "configmap", "web", "-o", "yaml"])
        .await
        .ok();
    let obj = yaml(&out.stdout);
    assert_eq!(obj["kind"], "ConfigMap");
    assert_eq!(obj["metadata"]["namespace"], "default");
    assert_eq!(obj["data"]["a"], "1");
    assert!(
        obj["metadata"]["uid"]
            .as_str()
            .is_some_and(|u| u.len() == 36)
    );
    assert!(obj["metadata"]["creationTimestamp"].is_string());

    let out = env.kubectl(&["get", "configmaps", "-o", "yaml"]).await.ok();
    let list = yaml(&out.stdout);
    assert_eq!(list["kind"], "List");
    assert!(list["items"].as_array().unwrap().len() >= 2);
}

#[tokio::test]
async fn delete_and_delete_with_finalizer() {
    let env = Env::start().await;
    let file = env.write("cm.yaml", CONFIGMAP);
    env.kubectl(&["apply", "-f", file.to_str().unwrap()])
        .await
        .ok();
    env.kubectl(&["delete", "configmap", "web"]).await.ok();
    assert!(
        env.cluster
            .get_object("v1", "ConfigMap", Some("default"), "web")
            .is_none()
    );

    let held = CONFIGMAP.replace("  labels: {app: web}", "  finalizers: [example.com/hold]");
    let file = env.write("held.yaml", &held);
    env.kubectl(&["apply", "-f", file.to_str().unwrap()])
        .await
        .ok();
    env.kubectl(&["delete", "configmap", "web", "--wait=false"])
        .await
        .ok();
    let cm = env
        .cluster
        .get_object("v1", "ConfigMap", Some("default"), "web")
        .expect("still there");
    assert!(cm["metadata"]["deletionTimestamp"].is_string());
    env.kubectl(&[
        "patch",
        "configmap",
        "web",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ])
    .await
    .ok();
    assert!(
        env.cluster
            .get_object("v1", "ConfigMap", Some("default"), "web")
            .is_none()
    );
}

#[tokio::test]
async fn wait_for_deployment_available() {
    let env = Env::start().await;
    let file = env.write("deploy.yaml", DEPLOYMENT);
    env.kubectl(&["apply", "-f", file.to_str().unwrap()])
        .await
        .ok();
    let out = env
        .kubectl(&[
            "wait",
            "--for=condition=Available",
            "deployment/web",
            "--timeout=60s",
        ])
        .await
        .ok();
    assert!(out.stdout.contains("condition met"), "{out:?}");
    let d = env
        .cluster
        .get_object("apps/v1", "Deployment", Some("default"), "web")
        .unwrap();
    assert_eq!(d["status"]["availableReplicas"], 2);
    let pods = env.cluster.list_objects("v1", "Pod");
    assert_eq!(pods.len(), 2);
    for pod in &pods {
        let image_id = pod["status"]["containerStatuses"][0]["imageID"]
            .as_str()
            .unwrap();
        assert!(
            image_id.starts_with("docker.io/library/nginx@sha256:"),
            "{image_id}"
        );
    }
}

#[tokio::test]
async fn auth_can_i_with_a_namespaced_token() {
    let env = Env::start().await;
    let token = env.cluster.tokens().namespaced["team-a"].clone();
    let yes = env
        .kubectl_with_token(
            &token,
            &["auth", "can-i", "create", "deployments", "-n", "team-a"],
        )
        .await;
    assert_eq!((yes.code, yes.stdout.trim()), (0, "yes"), "{yes:?}");
    let no = env
        .kubectl_with_token(
            &token,
            &["auth", "can-i", "list", "configmaps", "-n", "default"],
        )
        .await;
    assert_eq!(no.stdout.trim(), "no", "{no:?}");
    let denied = env
        .kubectl_with_token(&token, &["get", "configmaps", "-n", "default"])
        .await;
    assert_ne!(denied.code, 0);
    assert!(
        denied.stderr.contains(
            "configmaps is forbidden: User \"kubesim-team-a\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\""
        ),
        "{denied:?}"
    );
}

#[tokio::test]
async fn service_account_tokens_are_authorized_by_rbac() {
    let env = Env::start().await;
    let file = env.write(
        "sa.yaml",
        "apiVersion: v1
kind: ServiceAccount
metadata: {name: bot, namespace: team-a}
---
apiVersion: v1
kind: Secret
metadata:
  name: bot-token
  namespace: team-a
  annotations: {kubernetes.io/service-account.name: bot}
type: kubernetes.io/service-account-token
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: bot-view, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects: [{kind: ServiceAccount, name: bot, namespace: team-a}]
",
    );
    env.kubectl(&["apply", "-f", file.to_str().unwrap()])
        .await
        .ok();
    let secret = env
        .cluster
        .get_object("v1", "Secret", Some("team-a"), "bot-token")
        .unwrap();
    use base64::Engine;
    let decode = |v: &Value| {
        String::from_utf8(
            base64::engine::general_purpose::STANDARD
                .decode(v.as_str().unwrap())
                .unwrap(),
        )
        .unwrap()
    };
    assert_eq!(decode(&secret["data"]["ca.crt"]), env.cluster.ca_pem());
    let token = decode(&secret["data"]["token"]);
    env.kubectl_with_token(&token, &["get", "configmaps", "-n", "team-a"])
        .await
        .ok();
    let denied = env
        .kubectl_with_token(&token, &["delete", "configmap", "x", "-n", "team-a"])
        .await;
    assert!(
        denied.stderr.contains(
            "User \"system:serviceaccount:team-a:bot\" cannot delete resource \"configmaps\""
        ),
        "{denied:?}"
    );
    let can = env
        .kubectl_with_token(&token, &["auth", "can-i", "watch", "pods", "-n", "team-a"])
        .await;
    assert_eq!(can.stdout.trim(), "yes", "{can:?}");
}

#[tokio::test]
async fn imperative_create_sends_protobuf() {
    let env = Env::start().await;
    env.kubectl(&["create", "namespace", "demo"]).await.ok();
    env.kubectl(&[
        "create",
        "configmap",
        "c1",
        "-n",
        "demo",
        "--from-literal=a=b",
    ])
    .await
    .ok();
    env.kubectl(&[
        "create",
        "secret",
        "generic",
        "s1",
        "-n",
        "demo",
        "--from-literal=pw=hunter2",
    ])
    .await
    .ok();
    let ns = env
        .cluster
        .get_object("v1", "Namespace", None, "demo")
        .unwrap();
    assert_eq!(ns["status"]["phase"], "Active");
    assert!(ns["metadata"].get("generation").is_none());
    let cm = env
        .cluster
        .get_object("v1", "ConfigMap", Some("demo"), "c1")
        .unwrap();
    assert_eq!(cm["data"]["a"], "b");
    let secret = env
        .cluster
        .get_object("v1", "Secret", Some("demo"), "s1")
        .unwrap();
    assert_eq!(secret["data"]["pw"], "aHVudGVyMg==");
    assert_eq!(secret["type"], "Opaque");
    // Deployments too (see tests/protobuf_create.rs for every kind kubectl creates).
    let created = env
        .kubectl(&["create", "deployment", "x", "--image=nginx"])
        .await
        .ok();
    assert_eq!(created.stdout.trim(), "deployment.apps/x created");
}

const WIDGET_CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
    - {name: Ready, type: string, jsonPath: '.status.conditions[?(@.type=="Ready")].status'}
    - {name: Owner, type: string, priority: 1, jsonPath: .spec.owner}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
"#;

const WIDGET: &str = r#"apiVersion: example.com/v1
kind: Widget
metadata: {name: w1}
spec: {size: 3, owner: team-a}
status:
  conditions: [{type: Other, status: "False"}, {type: Ready, status: "True"}]
"#;

/// `kubectl get` of a custom resource prints the CRD's printer columns from the server's
/// Table (JSONPath filters included, priority-1 columns only with `-o wide`); a watch streams
/// Table rows too.
#[tokio::test]
async fn custom_resources_print_their_printer_columns() {
    let env = Env::start().await;
    let crd = env.write("crd.yaml", WIDGET_CRD);
    env.kubectl(&["apply", "-f", crd.to_str().unwrap()])
        .await
        .ok();
    let widget = env.write("w.yaml", WIDGET);
    let mut applied = None;
    for _ in 0..50 {
        let out = env
            .kubectl(&["apply", "-f", widget.to_str().unwrap()])
            .await;
        if out.code == 0 {
            applied = Some(out);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(applied.is_some(), "the Widget kind was never served");
    let rows = |text: &str| -> Vec<Vec<String>> {
        text.lines()
            .map(|l| l.split_whitespace().map(String::from).collect())
            .collect()
    };
    let out = env.kubectl(&["get", "widgets"]).await.ok();
    let table = rows(&out.stdout);
    assert_eq!(table[0], ["NAME", "SIZE", "READY", "AGE"], "{}", out.stdout);
    assert_eq!(table[1][..3], ["w1", "3", "True"], "{}", out.stdout);
    let wide = env.kubectl(&["get", "widgets", "-o", "wide"]).await.ok();
    assert_eq!(
        rows(&wide.stdout)[0],
        ["NAME", "SIZE", "READY", "OWNER", "AGE"],
        "{}",
        wide.stdout
    );
    let watched = env
        .kubectl(&["get", "widgets", "--watch", "--request-timeout=2s"])
        .await;
    assert!(
        watched.stdout.contains("SIZE") && watched.stdout.contains("w1"),
        "{watched:?}"
    );
}

/// A server-side apply over a field another manager set answers kube-apiserver's conflict
/// message, which names the manager and its version but never a time.
#[tokio::test]
async fn apply_conflicts_name_the_manager_without_a_time() {
    let env = Env::start().await;
    env.kubectl(&["create", "configmap", "c", "--from-literal=a=1"])
        .await
        .ok();
    let file = env.write(
        "c.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: \"2\"}\n",
    );
    let out = env
        .kubectl(&["apply", "--server-side", "-f", file.to_str().unwrap()])
        .await;
    assert_ne!(out.code, 0);
    assert!(
        out.stderr.contains(
            "Apply failed with 1 conflict: conflict with \"kubectl-create\" using v1: .data.a"
        ),
        "{}",
        out.stderr
    );
}
