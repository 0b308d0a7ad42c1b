//! `/openapi/v2` (issue #14 item 5): the Swagger 2.0 document, in the protobuf form the real
//! kubectl 1.32 asks for (client-side `apply`/`diff` patches, `explain
//! --output=plaintext-openapiv2`) and in JSON for everyone else.

mod common;

use common::Env;
use serde_json::{Value, json};

/// What client-go asks for, and what kube-openapi answers with.
const GNOSTIC_ASKED: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
const GNOSTIC: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

#[tokio::test]
async fn kubectl_explain_reads_the_protobuf_document() {
    let env = Env::start().await;
    let out = env
        .kubectl(&[
            "explain",
            "deployment.spec.replicas",
            "--output=plaintext-openapiv2",
        ])
        .await
        .ok();
    assert!(out.stdout.contains("KIND:     Deployment"), "{out:?}");
    assert!(
        out.stdout.contains("FIELD:    replicas <integer>"),
        "{out:?}"
    );
    let out = env
        .kubectl(&[
            "explain",
            "pods.spec.containers",
            "--output=plaintext-openapiv2",
        ])
        .await
        .ok();
    // kubectl 1.32's v2 printer names referenced kinds `Object`.
    assert!(
        out.stdout.contains("RESOURCE: containers <[]Object>"),
        "{out:?}"
    );
    assert!(out.stdout.contains("livenessProbe\t<Object>"), "{out:?}");
    assert!(out.stdout.contains("name\t<string> -required-"), "{out:?}");
    // A custom resource's schema is in the document once its CRD is.
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object", "properties": {"spec": {"type": "object", "properties": {
                    "size": {"type": "integer", "description": "how big"}}}}}}}]}});
    let (code, body) = env
        .json(
            "POST",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &crd,
        )
        .await;
    assert_eq!(code, 201, "{body}");
    let out = env
        .kubectl(&[
            "explain",
            "widgets.spec.size",
            "--output=plaintext-openapiv2",
        ])
        .await
        .ok();
    assert!(out.stdout.contains("how big"), "{out:?}");
}

/// The `/openapi/` requests in kubectl's `-v=6` log.
fn openapi_fetches(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains("/openapi/")).collect()
}

#[tokio::test]
async fn client_side_apply_patches_built_ins_from_v3_and_custom_resources_from_v2() {
    let env = Env::start().await;
    let manifest = |image: &str| {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web, namespace: team-a}}\nspec:\n  selector: {{matchLabels: {{app: web}}}}\n  template:\n    metadata: {{labels: {{app: web}}}}\n    spec:\n      containers:\n      - {{name: app, image: {image}}}\n      - {{name: side, image: busybox}}\n"
        )
    };
    let file = env.write("web.yaml", &manifest("nginx:1"));
    let file = file.to_str().unwrap();
    env.kubectl(&["apply", "-f", file]).await.ok();
    // A live-only change to one container, then an apply that changes the other: a patch
    // merged by container name (strategic, as the v3 document offers for built-ins, as on a
    // real server) keeps the live change.
    env.kubectl(&[
        "set",
        "env",
        "deployment/web",
        "-n",
        "team-a",
        "-c",
        "side",
        "LIVE=1",
    ])
    .await
    .ok();
    env.write("web.yaml", &manifest("nginx:2"));
    let out = env.kubectl(&["apply", "-f", file, "-v=6"]).await.ok();
    let fetches = openapi_fetches(&out.stderr);
    assert!(
        fetches.iter().all(|l| !l.contains("/openapi/v2")),
        "the v3 document serves the patch: {fetches:#?}"
    );
    assert!(
        !out.stderr.contains("error calculating patch"),
        "{}",
        out.stderr
    );
    assert!(
        out.stdout.contains("deployment.apps/web configured"),
        "{out:?}"
    );
    let (_, deploy) = env
        .raw(
            "GET",
            "/apis/apps/v1/namespaces/team-a/deployments/web",
            "",
            vec![],
        )
        .await;
    let containers = &deploy["spec"]["template"]["spec"]["containers"];
    assert_eq!(containers[0]["image"], "nginx:2", "{containers}");
    assert_eq!(
        containers[1]["env"],
        json!([{"name": "LIVE", "value": "1"}]),
        "{containers}"
    );
    // A custom resource: the v3 document offers no strategic merge patch, so kubectl reads
    // the v2 document's patch types and sends a merge patch.
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}});
    let (code, body) = env
        .json(
            "POST",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &crd,
        )
        .await;
    assert_eq!(code, 201, "{body}");
    let widget = |size: u32| {
        format!(
            "apiVersion: example.com/v1\nkind: Widget\nmetadata: {{name: w, namespace: team-a}}\nspec: {{size: {size}}}\n"
        )
    };
    let wfile = env.write("w.yaml", &widget(1));
    let wfile = wfile.to_str().unwrap();
    env.kubectl(&["apply", "-f", wfile]).await.ok();
    env.write("w.yaml", &widget(2));
    let out = env.kubectl(&["apply", "-f", wfile, "-v=8"]).await.ok();
    let fetches = openapi_fetches(&out.stderr);
    assert!(
        fetches
            .iter()
            .any(|l| l.contains("GET https://") && l.contains("/openapi/v2?timeout=32s")),
        "kubectl fetched the v2 document: {fetches:#?}"
    );
    assert!(
        out.stderr
            .contains("Content-Type: application/com.github.proto-openapi.spec.v2.v1.0+protobuf"),
        "kubesim answered the protobuf form: {}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("Content-Type: application/merge-patch+json"),
        "{}",
        out.stderr
    );
    assert!(
        out.stdout.contains("widget.example.com/w configured"),
        "{out:?}"
    );
    // `diff` shows the one difference.
    env.write("w.yaml", &widget(3));
    let diff = env.kubectl(&["diff", "-f", wfile]).await;
    assert_eq!(diff.code, 1, "{diff:?}");
    assert!(diff.stdout.contains("+  size: 3"), "{diff:?}");
}

#[tokio::test]
async fn json_is_served_unless_protobuf_is_asked_for_and_the_document_is_stable() {
    let env = Env::start().await;
    let (code, content_type, body) = env.get_as("/openapi/v2", "application/json").await;
    assert_eq!((code, content_type.as_str()), (200, "application/json"));
    let doc: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(doc["swagger"], "2.0");
    assert_eq!(
        doc["definitions"]["io.k8s.api.core.v1.Pod"]["x-kubernetes-group-version-kind"],
        json!([{"group": "", "version": "v1", "kind": "Pod"}])
    );
    assert!(doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"].is_object());
    // The same document every time: the thousandth fetch is byte-identical to the first.
    let (code, content_type, first) = env.get_as("/openapi/v2", GNOSTIC_ASKED).await;
    assert_eq!((code, content_type.as_str()), (200, GNOSTIC));
    assert!(first.len() > 100_000, "{}", first.len());
    for i in 0..1000 {
        let (code, _, again) = env.get_as("/openapi/v2", GNOSTIC).await;
        assert_eq!(code, 200);
        assert!(again == first, "fetch {i} differs");
    }
    let (code, content_type, _) = env.get_as("/openapi/v2", "text/html").await;
    assert_eq!((code, content_type.as_str()), (406, "application/json"));
    // Unauthenticated callers get 401, as for every non-public path.
    let anonymous = reqwest_less_get(&env).await;
    assert_eq!(anonymous, 401);
}

/// A GET of /openapi/v2 without credentials: its status.
async fn reqwest_less_get(env: &Env) -> u16 {
    let kubeconfig = env.cluster.kubeconfig();
    let mut config: kube::config::Kubeconfig =
        kube::config::Kubeconfig::from_yaml(&kubeconfig).unwrap();
    for auth in &mut config.auth_infos {
        if let Some(info) = auth.auth_info.as_mut() {
            info.token = None;
        }
    }
    let options = kube::config::KubeConfigOptions::default();
    let config = kube::Config::from_custom_kubeconfig(config, &options)
        .await
        .unwrap();
    let client = kube::Client::try_from(config).unwrap();
    let req = hyper::http::Request::builder()
        .uri("/openapi/v2")
        .body(kube::client::Body::empty())
        .unwrap();
    client.send(req).await.unwrap().status().as_u16()
}
