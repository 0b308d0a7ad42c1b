//! CRD schemas held as kube-apiserver 1.32 holds them: non-structural schemas, protected
//! groups and dotless groups refused; custom resources pruned, defaulted and validated
//! (OpenAPI and `x-kubernetes-validations` CEL rules) with the API server's field paths and
//! messages; server-side apply following the CRD's list and map types; every served version
//! of a multi-version CRD served from one storage; wardn's own App CRD accepted and enforced.
//! With the real kubectl 1.32 and raw HTTP.

mod common;

use common::{Env, raw_with};
use hyper::http::StatusCode;
use serde_json::{Value, json};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";

/// A CRD exercising defaults, bounds, enums, patterns, list types and CEL rules.
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
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [image]
            x-kubernetes-validations:
            - rule: self.minReplicas <= self.maxReplicas
              message: minReplicas must not exceed maxReplicas
            - rule: self.image == oldSelf.image || !has(oldSelf.locked) || !oldSelf.locked
              message: image is locked
            properties:
              image: {type: string, pattern: '^[a-z0-9./:-]+$', maxLength: 40}
              locked: {type: boolean}
              minReplicas: {type: integer, minimum: 0, default: 1}
              maxReplicas: {type: integer, maximum: 10, default: 3}
              mode: {type: string, enum: [Auto, Manual], default: Auto}
              tags:
                type: array
                maxItems: 3
                x-kubernetes-list-type: set
                items: {type: string}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    port: {type: integer}
              selector:
                type: object
                x-kubernetes-map-type: atomic
                additionalProperties: {type: string}
              extra:
                type: object
                x-kubernetes-preserve-unknown-fields: true
          status:
            type: object
            properties:
              ready: {type: boolean}
"#;

fn widget(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec})
}

/// Applies a CRD with kubectl, then waits until its kind is served.
async fn install(env: &Env, yaml: &str, served_path: &str) {
    let file = env.write("crd.yaml", yaml);
    env.kubectl(&["apply", "-f", file.to_str().unwrap()])
        .await
        .ok();
    let (code, body) = env.raw("GET", served_path, "", vec![]).await;
    assert_eq!(code, StatusCode::OK, "{served_path} not served: {body}");
}

fn causes(status: &Value) -> Vec<String> {
    status["details"]["causes"]
        .as_array()
        .map(|c| {
            c.iter()
                .map(|c| {
                    format!(
                        "{}: {}",
                        c["field"].as_str().unwrap(),
                        c["message"].as_str().unwrap()
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn non_structural_protected_and_dotless_crds_are_refused_and_nothing_is_stored() {
    let env = Env::start().await;
    let cases = [
        (
            "non-structural",
            r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Gadget, plural: gadgets}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            properties:
              size: {type: integer}
"#,
            "The CustomResourceDefinition \"gadgets.example.com\" is invalid: spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields",
            "gadgets.example.com",
        ),
        (
            "protected",
            r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.x.k8s.io}
spec:
  group: x.k8s.io
  scope: Namespaced
  names: {kind: Gadget, plural: gadgets}
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}
"#,
            "The CustomResourceDefinition \"gadgets.x.k8s.io\" is invalid: metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111",
            "gadgets.x.k8s.io",
        ),
        (
            "built-in group",
            r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: deployments.apps}
spec:
  group: apps
  scope: Namespaced
  names: {kind: Deployment, plural: deployments}
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
"#,
            "The CustomResourceDefinition \"deployments.apps\" is invalid: spec.group: Invalid value: \"apps\": should be a domain with at least one dot",
            "deployments.apps",
        ),
        (
            "no schema",
            r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Gadget, plural: gadgets}
  versions:
  - {name: v1, served: true, storage: true}
"#,
            "spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required",
            "gadgets.example.com",
        ),
        (
            "CEL rule that does not compile",
            r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Gadget, plural: gadgets}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-validations: [{rule: "self.spec.size >"}]
"#,
            "spec.versions[0].schema.openAPIV3Schema.x-kubernetes-validations[0].rule: Invalid value: \"self.spec.size >\": compilation failed",
            "gadgets.example.com",
        ),
    ];
    for (what, yaml, expected, name) in cases {
        let file = env.write("bad.yaml", yaml);
        let out = env.kubectl(&["apply", "-f", file.to_str().unwrap()]).await;
        assert_ne!(out.code, 0, "{what}: {out:?}");
        assert!(out.stderr.contains(expected), "{what}: {}", out.stderr);
        let (code, _) = env.raw("GET", &format!("{CRDS}/{name}"), "", vec![]).await;
        assert_eq!(code, StatusCode::NOT_FOUND, "{what}: nothing stored");
    }
    // An approved protected group is accepted; the built-in kinds stay the built-ins.
    let approved = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: ingresses.networking.k8s.io
  annotations: {api-approved.kubernetes.io: "https://github.com/kubernetes/enhancements/pull/1111"}
spec:
  group: networking.k8s.io
  scope: Namespaced
  names: {kind: Ingress, plural: ingresses}
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
"#;
    let file = env.write("approved.yaml", approved);
    env.kubectl(&["apply", "-f", file.to_str().unwrap()])
        .await
        .ok();
    let bad_ingress = json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"name": "i"}, "spec": {"rules": [{"http": {"paths": [{"path": "/", "backend": {"service": {"name": "s", "port": {"number": 80}}}}]}}]}});
    let (code, status) = env
        .json(
            "POST",
            "/apis/networking.k8s.io/v1/namespaces/default/ingresses",
            &bad_ingress,
        )
        .await;
    assert_eq!(
        code,
        StatusCode::UNPROCESSABLE_ENTITY,
        "still the built-in Ingress: {status}"
    );
}

#[tokio::test]
async fn custom_resources_are_pruned_defaulted_and_validated_as_the_api_server_does() {
    let env = Env::start().await;
    install(&env, WIDGET_CRD, WIDGETS).await;
    let client = env.cluster.client().await.unwrap();
    let post = |body: Value, query: &'static str| {
        let client = client.clone();
        async move {
            raw_with(
                &client,
                "POST",
                &format!("{WIDGETS}{query}"),
                "application/json",
                serde_json::to_vec(&body).unwrap(),
            )
            .await
        }
    };

    // Unknown fields: Strict refuses them, the default (Warn) prunes them.
    let (code, status) = post(
        widget(
            "w",
            json!({"image": "nginx", "bogus": 1, "extra": {"kept": {"deep": true}}}),
        ),
        "?fieldValidation=Strict",
    )
    .await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "{status}");
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .contains("strict decoding error: unknown field \"spec.bogus\""),
        "{status}"
    );
    let (code, created) = post(
        widget(
            "w",
            json!({"image": "nginx", "bogus": 1, "extra": {"kept": {"deep": true}}}),
        ),
        "",
    )
    .await;
    assert_eq!(code, StatusCode::CREATED, "{created}");
    assert!(created["spec"].get("bogus").is_none(), "pruned: {created}");
    assert_eq!(created["spec"]["extra"]["kept"]["deep"], true, "preserved");
    assert_eq!(created["spec"]["minReplicas"], 1, "defaulted");
    assert_eq!(created["spec"]["maxReplicas"], 3);
    assert_eq!(created["spec"]["mode"], "Auto");
    let stored = env
        .cluster
        .get_object("example.com/v1", "Widget", Some("default"), "w")
        .unwrap();
    assert!(stored["spec"].get("bogus").is_none(), "never stored");

    // Schema violations: 422 naming every field as kube-apiserver does.
    let (code, status) = post(
        widget("bad", json!({"minReplicas": "two", "mode": "Sometimes", "maxReplicas": 11,
            "image": "UPPER", "tags": ["a", "b", "a", "c"], "ports": [{"name": "http"}, {"name": "http"}]})),
        "",
    )
    .await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{status}");
    assert_eq!(
        causes(&status),
        vec![
            "spec.minReplicas: Invalid value: \"string\": spec.minReplicas in body must be of type integer: \"string\"",
            "spec.mode: Unsupported value: \"Sometimes\": supported values: \"Auto\", \"Manual\"",
            "spec.maxReplicas: Invalid value: 11: spec.maxReplicas in body should be less than or equal to 10",
            "spec.image: Invalid value: \"UPPER\": spec.image in body should match '^[a-z0-9./:-]+$'",
            "spec.tags: Too many: 4: must have at most 3 items",
            "spec.tags[2]: Duplicate value: \"a\"",
            "spec.ports[1]: Duplicate value: {\"name\":\"http\"}",
        ]
    );
    assert!(
        status["message"].as_str().unwrap().starts_with(
            "Widget.example.com \"bad\" is invalid: [spec.minReplicas: Invalid value: \"string\""
        ),
        "{status}"
    );
    let (code, status) = post(json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "empty"}, "spec": {}}), "").await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(causes(&status), vec!["spec.image: Required value"]);

    // CEL rules: the rule's message; transition rules (oldSelf) on updates only.
    let (code, status) = post(
        widget("cel", json!({"image": "nginx", "minReplicas": 5})),
        "",
    )
    .await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        status["message"],
        "Widget.example.com \"cel\" is invalid: spec: Invalid value: \"object\": minReplicas must not exceed maxReplicas"
    );
    let (code, _) = post(
        widget("locked", json!({"image": "nginx", "locked": true})),
        "",
    )
    .await;
    assert_eq!(code, StatusCode::CREATED);
    let (code, status) = raw_with(
        &client,
        "PATCH",
        &format!("{WIDGETS}/locked"),
        "application/merge-patch+json",
        br#"{"spec":{"image":"httpd"}}"#.to_vec(),
    )
    .await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{status}");
    assert_eq!(
        causes(&status),
        vec!["spec: Invalid value: \"object\": image is locked"]
    );

    // kubectl shows the same errors, and a dry run is held to them too.
    let file = env.write(
        "bad.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: k}\nspec: {image: nginx, mode: Never}\n",
    );
    for extra in [&[][..], &["--dry-run=server"][..]] {
        let mut args = vec!["apply", "-f", file.to_str().unwrap()];
        args.extend_from_slice(extra);
        let out = env.kubectl(&args).await;
        assert_ne!(out.code, 0);
        assert!(
            out.stderr.contains("The Widget \"k\" is invalid: spec.mode: Unsupported value: \"Never\": supported values: \"Auto\", \"Manual\""),
            "{}",
            out.stderr
        );
    }
    assert!(
        env.cluster
            .get_object("example.com/v1", "Widget", Some("default"), "k")
            .is_none()
    );
}

#[tokio::test]
async fn server_side_apply_follows_the_crd_list_and_map_types() {
    let env = Env::start().await;
    install(&env, WIDGET_CRD, WIDGETS).await;
    let client = env.cluster.client().await.unwrap();
    let apply = |manager: &'static str, spec: &'static str| {
        let client = client.clone();
        async move {
            let body = format!(
                "apiVersion: example.com/v1\nkind: Widget\nmetadata: {{name: s}}\nspec: {spec}\n"
            );
            raw_with(
                &client,
                "PATCH",
                &format!("{WIDGETS}/s?fieldManager={manager}"),
                "application/apply-patch+yaml",
                body.into_bytes(),
            )
            .await
        }
    };
    let (code, _) = apply(
        "a",
        "{image: nginx, ports: [{name: http, port: 80}], tags: [blue], selector: {app: a}}",
    )
    .await;
    assert_eq!(code, StatusCode::CREATED);
    let (code, merged) = apply("b", "{ports: [{name: metrics, port: 9090}], tags: [green]}").await;
    assert_eq!(code, StatusCode::OK, "{merged}");
    // map list items and set items are owned one by one: both managers' entries are kept.
    assert_eq!(
        merged["spec"]["ports"],
        json!([{"name": "http", "port": 80}, {"name": "metrics", "port": 9090}])
    );
    assert_eq!(merged["spec"]["tags"], json!(["blue", "green"]));
    // an atomic map is owned whole: another manager's different map conflicts.
    let (code, conflict) = apply("b", "{selector: {app: b}}").await;
    assert_eq!(code, StatusCode::CONFLICT, "{conflict}");
    assert!(
        conflict["message"]
            .as_str()
            .unwrap()
            .contains(".spec.selector"),
        "{conflict}"
    );
    // manager a gives up its port: only its item goes.
    let (code, after) = apply("a", "{image: nginx, tags: [blue], selector: {app: a}}").await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(
        after["spec"]["ports"],
        json!([{"name": "metrics", "port": 9090}])
    );
    // an applied object is validated like any other write.
    let (code, invalid) = apply("a", "{image: nginx, maxReplicas: 99}").await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{invalid}");
}

#[tokio::test]
async fn every_served_version_is_served_from_one_storage() {
    let env = Env::start().await;
    let crd = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gizmos.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Gizmo, plural: gizmos}
  conversion: {strategy: None}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer, maximum: 5}}}
  - name: v1beta1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}, legacy: {type: string}}}
  - name: v1alpha1
    served: false
    storage: false
    schema: {openAPIV3Schema: {type: object}}
"#;
    install(&env, crd, "/apis/example.com/v1/namespaces/default/gizmos").await;
    let beta = "/apis/example.com/v1beta1/namespaces/default/gizmos";
    let g = json!({"apiVersion": "example.com/v1beta1", "kind": "Gizmo", "metadata": {"name": "g"}, "spec": {"size": 9, "legacy": "x"}});
    let (code, created) = env.json("POST", beta, &g).await;
    assert_eq!(code, StatusCode::CREATED, "v1beta1's own schema: {created}");
    assert_eq!(created["spec"]["legacy"], "x");
    let (code, at_v1) = env
        .raw(
            "GET",
            "/apis/example.com/v1/namespaces/default/gizmos/g",
            "",
            vec![],
        )
        .await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(at_v1["apiVersion"], "example.com/v1");
    assert_eq!(at_v1["metadata"]["uid"], created["metadata"]["uid"]);
    let (code, _) = env
        .raw(
            "GET",
            "/apis/example.com/v1alpha1/namespaces/default/gizmos",
            "",
            vec![],
        )
        .await;
    assert_eq!(
        code,
        StatusCode::NOT_FOUND,
        "unserved versions are not served"
    );
    let out = env
        .kubectl(&[
            "get",
            "gizmos.v1beta1.example.com",
            "g",
            "-o",
            "jsonpath={.apiVersion}",
        ])
        .await
        .ok();
    assert_eq!(out.stdout, "example.com/v1beta1");
    let too_big = json!({"apiVersion": "example.com/v1", "kind": "Gizmo", "metadata": {"name": "h"}, "spec": {"size": 9}});
    let (code, _) = env
        .json(
            "POST",
            "/apis/example.com/v1/namespaces/default/gizmos",
            &too_big,
        )
        .await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "v1's schema at v1");
}

#[tokio::test]
async fn wardns_app_crd_is_accepted_and_enforced() {
    let env = Env::start().await;
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/core/crd.yaml");
    let out = env.kubectl(&["apply", "-f", path]).await.ok();
    assert!(out.stdout.contains("created"), "{out:?}");
    let crd = env
        .cluster
        .get_object(
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            None,
            "apps.cd.wardn.space",
        )
        .expect("stored");
    let version = crd["spec"]["versions"][0]["name"]
        .as_str()
        .unwrap()
        .to_string();
    let apps = format!("/apis/cd.wardn.space/{version}/namespaces/default/apps");
    let (code, _) = env.raw("GET", &apps, "", vec![]).await;
    assert_eq!(code, StatusCode::OK);
    let app = |spec: Value| json!({"apiVersion": format!("cd.wardn.space/{version}"), "kind": "App", "metadata": {"name": "a"}, "spec": spec});
    let (code, status) = env
        .json("POST", &apps, &app(json!({"destination": {}})))
        .await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{status}");
    assert!(
        causes(&status).contains(&"spec.destination.namespace: Required value".to_string()),
        "{status}"
    );
}

/// The 1,000th write is judged like the first: a mix of valid and invalid custom resources,
/// every invalid one refused, every valid one stored with its defaults.
#[tokio::test]
async fn a_thousand_custom_resource_writes_are_each_validated() {
    let env = Env::start().await;
    install(&env, WIDGET_CRD, WIDGETS).await;
    let client = env.cluster.client().await.unwrap();
    let (mut created, mut refused) = (0, 0);
    for i in 0..1000 {
        let spec = match i % 4 {
            0 => json!({"image": "nginx", "minReplicas": (i / 4) % 4}),
            1 => json!({"image": "nginx", "minReplicas": 9, "maxReplicas": 2}),
            2 => json!({"image": format!("Bad{i}")}),
            _ => json!({"image": "nginx", "tags": ["a", "a"]}),
        };
        let (code, body) = raw_with(
            &client,
            "POST",
            WIDGETS,
            "application/json",
            serde_json::to_vec(&widget(&format!("w{i}"), spec)).unwrap(),
        )
        .await;
        match (i % 4, code) {
            (0, StatusCode::CREATED) => {
                created += 1;
                assert_eq!(body["spec"]["maxReplicas"], 3);
            }
            (0, other) => panic!("write {i} refused with {other}: {body}"),
            (_, StatusCode::UNPROCESSABLE_ENTITY) => refused += 1,
            (_, other) => panic!("write {i} answered {other}: {body}"),
        }
    }
    assert_eq!((created, refused), (250, 750));
    assert_eq!(
        env.cluster.list_objects("example.com/v1", "Widget").len(),
        250
    );
}
