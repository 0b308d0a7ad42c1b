//! Validation as kube-apiserver 1.32 does it, through raw HTTP and the real kubectl: 422
//! Invalid with kube-apiserver's causes, the same on every write path (create, update,
//! patch, server-side apply, dry run), immutable fields, `fieldValidation`, and
//! quantities stored in canonical form.

mod common;

use common::{Env, yaml};
use serde_json::{Value, json};

const DEPLOYS: &str = "/apis/apps/v1/namespaces/default/deployments";
const CMS: &str = "/api/v1/namespaces/default/configmaps";

fn deployment(name: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}]}}}})
}

/// The (field, reason, message) of each cause of a Status.
fn causes(status: &Value) -> Vec<(String, String, String)> {
    status["details"]["causes"]
        .as_array()
        .unwrap_or_else(|| panic!("no causes in {status}"))
        .iter()
        .map(|c| {
            let f = |k: &str| c[k].as_str().unwrap_or_default().to_string();
            (f("field"), f("reason"), f("message"))
        })
        .collect()
}

fn cause(field: &str, reason: &str, message: &str) -> (String, String, String) {
    (field.into(), reason.into(), message.into())
}

const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

#[tokio::test]
async fn invalid_deployments_are_refused_with_the_apiservers_causes() {
    let env = Env::start().await;
    let mut d = deployment("web");
    d["spec"].as_object_mut().unwrap().remove("selector");
    let (code, s) = env.json("POST", DEPLOYS, &d).await;
    assert_eq!(
        (code.as_u16(), s["reason"].as_str()),
        (422, Some("Invalid")),
        "{s}"
    );
    assert_eq!(
        s["message"],
        "Deployment.apps \"web\" is invalid: [spec.selector: Required value, spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"web\"}: `selector` does not match template `labels`]"
    );
    assert_eq!(s["details"]["kind"], "Deployment");
    assert_eq!(s["details"]["group"], "apps");
    assert_eq!(
        causes(&s),
        vec![
            cause("spec.selector", "FieldValueRequired", "Required value"),
            cause(
                "spec.template.metadata.labels",
                "FieldValueInvalid",
                "Invalid value: map[string]string{\"app\":\"web\"}: `selector` does not match template `labels`"
            ),
        ]
    );
    let mut d = deployment("web");
    d["spec"]["selector"]["matchLabels"]["app"] = json!("other");
    d["spec"]["replicas"] = json!(-1);
    let (code, s) = env.json("POST", DEPLOYS, &d).await;
    assert_eq!(code, 422);
    assert_eq!(
        causes(&s)[0],
        cause(
            "spec.replicas",
            "FieldValueInvalid",
            "Invalid value: -1: must be greater than or equal to 0"
        )
    );
    assert_eq!(causes(&s)[1].0, "spec.template.metadata.labels");
    let mut d = deployment("web");
    d["spec"]["template"]["spec"]["containers"] = json!([
        {"name": "app", "image": "a"}, {"name": "app"}, {"name": "Bad_Name", "image": "b"}
    ]);
    let (code, s) = env.json("POST", DEPLOYS, &d).await;
    assert_eq!(code, 422);
    let c = causes(&s);
    let p = "spec.template.spec.containers";
    assert!(
        c.contains(&cause(
            &format!("{p}[1].name"),
            "FieldValueDuplicate",
            "Duplicate value: \"app\""
        )),
        "{c:?}"
    );
    assert!(
        c.contains(&cause(
            &format!("{p}[1].image"),
            "FieldValueRequired",
            "Required value"
        )),
        "{c:?}"
    );
    assert!(
        c.iter().any(|(f, r, m)| f == &format!("{p}[2].name")
            && r == "FieldValueInvalid"
            && m.starts_with("Invalid value: \"Bad_Name\": a lowercase RFC 1123 label")),
        "{c:?}"
    );
    let mut d = deployment("web");
    d["spec"]["template"]["spec"]["restartPolicy"] = json!("Never");
    let (code, s) = env.json("POST", DEPLOYS, &d).await;
    assert_eq!(code, 422);
    assert_eq!(
        causes(&s),
        vec![cause(
            "spec.template.spec.restartPolicy",
            "FieldValueNotSupported",
            "Unsupported value: \"Never\": supported values: \"Always\""
        )]
    );
    // nothing was stored
    let (code, _) = env
        .json("GET", &format!("{DEPLOYS}/web"), &Value::Null)
        .await;
    assert_eq!(code, 404);
}

#[tokio::test]
async fn names_labels_and_annotations_follow_the_apiserver_rules() {
    let env = Env::start().await;
    let (code, s) = env
        .json("POST", CMS, &json!({"metadata": {"name": "BadName"}}))
        .await;
    assert_eq!(code, 422, "{s}");
    assert_eq!(
        s["message"],
        format!(
            "ConfigMap \"BadName\" is invalid: metadata.name: Invalid value: \"BadName\": {SUBDOMAIN_MSG}"
        )
    );
    assert!(s["details"].get("group").is_none());
    // Namespaces are DNS-1123 labels, Services DNS-1035 labels, RBAC names path segments.
    let (code, s) = env
        .json(
            "POST",
            "/api/v1/namespaces",
            &json!({"metadata": {"name": "a.b"}}),
        )
        .await;
    assert_eq!(code, 422);
    assert_eq!(
        causes(&s)[0].2,
        "Invalid value: \"a.b\": must not contain dots"
    );
    let svc = json!({"metadata": {"name": "1web"}, "spec": {"ports": [{"port": 80}]}});
    let (code, s) = env
        .json("POST", "/api/v1/namespaces/default/services", &svc)
        .await;
    assert_eq!(code, 422);
    assert!(
        causes(&s)[0].2.contains("a DNS-1035 label must consist of"),
        "{s}"
    );
    let role = json!({"metadata": {"name": "system:reader"}, "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]});
    let (code, s) = env
        .json(
            "POST",
            "/apis/rbac.authorization.k8s.io/v1/clusterroles",
            &role,
        )
        .await;
    assert_eq!(code, 201, "{s}");
    let bad_labels = json!({"metadata": {"name": "c", "labels": {"a/b/c": "x", "ok": "bad value"},
        "annotations": {"Example.COM/Key": "fine", "-bad": "x"}}});
    let (code, s) = env.json("POST", CMS, &bad_labels).await;
    assert_eq!(code, 422);
    let c = causes(&s);
    assert_eq!(c.len(), 3, "{c:?}");
    assert_eq!(c[0].0, "metadata.labels");
    assert!(
        c[0].2
            .starts_with("Invalid value: \"a/b/c\": a qualified name must consist of"),
        "{c:?}"
    );
    assert!(
        c[1].2
            .starts_with("Invalid value: \"bad value\": a valid label must be an empty string"),
        "{c:?}"
    );
    assert_eq!(c[2].0, "metadata.annotations");
    assert!(
        c[2].2
            .starts_with("Invalid value: \"-bad\": name part must consist of"),
        "{c:?}"
    );
    let (code, s) = env
        .json(
            "POST",
            CMS,
            &json!({"metadata": {"name": "c"}, "data": {"bad/key": "x"}}),
        )
        .await;
    assert_eq!(code, 422);
    assert_eq!(causes(&s)[0].0, "data[bad/key]");
    assert!(
        causes(&s)[0]
            .2
            .contains("a valid config key must consist of alphanumeric characters")
    );
    let (code, s) = env
        .json("POST", CMS, &json!({"metadata": {"generateName": "Web-"}}))
        .await;
    assert_eq!(code, 422);
    assert_eq!(causes(&s)[0].0, "metadata.generateName");
}

#[tokio::test]
async fn every_write_path_validates_the_same_way() {
    let env = Env::start().await;
    let mut bad = deployment("web");
    bad["spec"]["replicas"] = json!(-1);
    let (code, s) = env
        .json("POST", &format!("{DEPLOYS}?dryRun=All"), &bad)
        .await;
    assert_eq!(code, 422, "dry-run create: {s}");
    let body = serde_json::to_vec(&bad).unwrap();
    let (code, s) = env
        .raw(
            "PATCH",
            &format!("{DEPLOYS}/web?fieldManager=t"),
            "application/apply-patch+yaml",
            body.clone(),
        )
        .await;
    assert_eq!(code, 422, "apply create: {s}");
    assert_eq!(causes(&s)[0].0, "spec.replicas");
    let (code, _) = env.json("POST", DEPLOYS, &deployment("web")).await;
    assert_eq!(code, 201);
    let (code, s) = env
        .raw(
            "PATCH",
            &format!("{DEPLOYS}/web?fieldManager=t&force=true"),
            "application/apply-patch+yaml",
            body,
        )
        .await;
    assert_eq!(code, 422, "apply update: {s}");
    for ct in [
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
    ] {
        let (code, s) = env
            .raw(
                "PATCH",
                &format!("{DEPLOYS}/web"),
                ct,
                br#"{"spec":{"replicas":-1}}"#.to_vec(),
            )
            .await;
        assert_eq!(code, 422, "{ct}: {s}");
    }
    let (code, s) = env
        .raw(
            "PATCH",
            &format!("{DEPLOYS}/web"),
            "application/json-patch+json",
            br#"[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":""}]"#
                .to_vec(),
        )
        .await;
    assert_eq!(code, 422, "{s}");
    assert_eq!(
        causes(&s)[0],
        cause(
            "spec.template.spec.containers[0].image",
            "FieldValueRequired",
            "Required value"
        )
    );
    let (code, s) = env
        .raw("PUT", &format!("{DEPLOYS}/web/scale"), "application/json",
            serde_json::to_vec(&json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "web", "namespace": "default"}, "spec": {"replicas": -2}})).unwrap())
        .await;
    assert_eq!(code, 422, "{s}");
    let (_, live) = env
        .json("GET", &format!("{DEPLOYS}/web"), &Value::Null)
        .await;
    assert_eq!(live["spec"]["replicas"], 1);
    assert_eq!(
        live["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.25"
    );
}

#[tokio::test]
async fn immutable_fields_are_refused_with_the_apiservers_messages() {
    let env = Env::start().await;
    env.json("POST", DEPLOYS, &deployment("web")).await;
    let patch = br#"{"spec":{"selector":{"matchLabels":{"app":"x"}},"template":{"metadata":{"labels":{"app":"x"}}}}}"#;
    let (code, s) = env
        .raw(
            "PATCH",
            &format!("{DEPLOYS}/web"),
            "application/merge-patch+json",
            patch.to_vec(),
        )
        .await;
    assert_eq!(code, 422, "{s}");
    assert_eq!(
        s["message"],
        "Deployment.apps \"web\" is invalid: spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"x\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable"
    );
    // Service cluster IPs
    let svcs = "/api/v1/namespaces/default/services";
    let (_, svc) = env
        .json("POST", svcs, &json!({"metadata": {"name": "web"}, "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}))
        .await;
    let ip = svc["spec"]["clusterIP"].as_str().unwrap().to_string();
    let mut changed = svc.clone();
    changed["spec"]["clusterIP"] = json!("10.96.200.200");
    changed["spec"]["clusterIPs"] = json!(["10.96.200.200"]);
    let (code, s) = env.json("PUT", &format!("{svcs}/web"), &changed).await;
    assert_eq!(code, 422, "{s}");
    assert_eq!(
        causes(&s),
        vec![cause(
            "spec.clusterIPs[0]",
            "FieldValueInvalid",
            "Invalid value: []string{\"10.96.200.200\"}: may not change once set"
        )]
    );
    assert_ne!(ip, "10.96.200.200");
    // immutable ConfigMaps and Secrets
    env.json(
        "POST",
        CMS,
        &json!({"metadata": {"name": "frozen"}, "immutable": true, "data": {"a": "1"}}),
    )
    .await;
    let (code, s) = env
        .raw(
            "PATCH",
            &format!("{CMS}/frozen"),
            "application/merge-patch+json",
            br#"{"data":{"a":"2"}}"#.to_vec(),
        )
        .await;
    assert_eq!(code, 422);
    assert_eq!(
        causes(&s),
        vec![cause(
            "data",
            "FieldValueForbidden",
            "Forbidden: field is immutable when `immutable` is set"
        )]
    );
    let secrets = "/api/v1/namespaces/default/secrets";
    env.json(
        "POST",
        secrets,
        &json!({"metadata": {"name": "s"}, "data": {"a": "MQ=="}}),
    )
    .await;
    let (code, s) = env
        .raw(
            "PATCH",
            &format!("{secrets}/s"),
            "application/merge-patch+json",
            br#"{"type":"kubernetes.io/tls"}"#.to_vec(),
        )
        .await;
    assert_eq!(code, 422);
    assert!(
        causes(&s).contains(&cause(
            "type",
            "FieldValueInvalid",
            "Invalid value: \"kubernetes.io/tls\": field is immutable"
        )),
        "{s}"
    );
    // Job templates
    let jobs = "/apis/batch/v1/namespaces/default/jobs";
    let job = json!({"metadata": {"name": "j"}, "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}});
    let (code, s) = env.json("POST", jobs, &job).await;
    assert_eq!(code, 201, "{s}");
    let (code, s) = env
        .raw(
            "PATCH",
            &format!("{jobs}/j"),
            "application/strategic-merge-patch+json",
            br#"{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"alpine"}]}}}}"#
                .to_vec(),
        )
        .await;
    assert_eq!(code, 422);
    assert_eq!(causes(&s)[0].0, "spec.template");
    assert!(causes(&s)[0].2.ends_with("field is immutable"));
    // PVC specs
    let pvcs = "/api/v1/namespaces/default/persistentvolumeclaims";
    let pvc = json!({"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}});
    assert_eq!(env.json("POST", pvcs, &pvc).await.0, 201);
    let (code, s) = env
        .raw(
            "PATCH",
            &format!("{pvcs}/data"),
            "application/merge-patch+json",
            br#"{"spec":{"accessModes":["ReadWriteMany"]}}"#.to_vec(),
        )
        .await;
    assert_eq!(code, 422);
    assert_eq!(causes(&s)[0].0, "spec");
    assert!(
        causes(&s)[0]
            .2
            .starts_with("Forbidden: spec is immutable after creation except resources.requests")
    );
    let (code, _) = env
        .raw(
            "PATCH",
            &format!("{pvcs}/data"),
            "application/merge-patch+json",
            br#"{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}"#.to_vec(),
        )
        .await;
    assert_eq!(code, 200, "storage expansion is allowed");
}

#[tokio::test]
async fn no_finalizer_can_be_added_to_an_object_being_deleted() {
    let env = Env::start().await;
    env.json(
        "POST",
        CMS,
        &json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}),
    )
    .await;
    let (code, s) = env
        .json("DELETE", &format!("{CMS}/held"), &Value::Null)
        .await;
    assert_eq!(code, 200, "{s}");
    let (code, s) = env
        .raw(
            "PATCH",
            &format!("{CMS}/held"),
            "application/merge-patch+json",
            br#"{"metadata":{"finalizers":["example.com/hold","example.com/more"]}}"#.to_vec(),
        )
        .await;
    assert_eq!(code, 422, "{s}");
    assert_eq!(
        causes(&s),
        vec![cause(
            "metadata.finalizers",
            "FieldValueForbidden",
            "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"example.com/more\"}"
        )]
    );
    let (code, _) = env
        .raw(
            "PATCH",
            &format!("{CMS}/held"),
            "application/merge-patch+json",
            br#"{"metadata":{"finalizers":null}}"#.to_vec(),
        )
        .await;
    assert_eq!(code, 200, "removing finalizers is fine");
}

#[tokio::test]
async fn services_ingresses_jobs_and_rbac_follow_their_rules() {
    let env = Env::start().await;
    let svc = json!({"metadata": {"name": "web"}, "spec": {"type": "Weird", "ports": [{"port": 80}, {"port": 70000, "protocol": "XTP"}]}});
    let (code, s) = env
        .json("POST", "/api/v1/namespaces/default/services", &svc)
        .await;
    assert_eq!(code, 422, "{s}");
    let c = causes(&s);
    assert!(c.contains(&cause("spec.type", "FieldValueNotSupported", "Unsupported value: \"Weird\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\"")), "{c:?}");
    assert!(
        c.contains(&cause(
            "spec.ports[0].name",
            "FieldValueRequired",
            "Required value"
        )),
        "{c:?}"
    );
    assert!(
        c.contains(&cause(
            "spec.ports[1].port",
            "FieldValueInvalid",
            "Invalid value: 70000: must be between 1 and 65535, inclusive"
        )),
        "{c:?}"
    );
    assert!(
        c.contains(&cause(
            "spec.ports[1].protocol",
            "FieldValueNotSupported",
            "Unsupported value: \"XTP\": supported values: \"SCTP\", \"TCP\", \"UDP\""
        )),
        "{c:?}"
    );
    let ing = json!({"metadata": {"name": "web"}, "spec": {"rules": [{"host": "Web.example.com", "http": {"paths": [
        {"path": "/", "backend": {"service": {"name": "web", "port": {"number": 80}}}},
        {"path": "api", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {}}}}]}}]}});
    let (code, s) = env
        .json(
            "POST",
            "/apis/networking.k8s.io/v1/namespaces/default/ingresses",
            &ing,
        )
        .await;
    assert_eq!(code, 422, "{s}");
    let c = causes(&s);
    assert!(
        c.contains(&cause(
            "spec.rules[0].http.paths[0].pathType",
            "FieldValueRequired",
            "Required value: pathType must be specified"
        )),
        "{c:?}"
    );
    assert!(
        c.contains(&cause(
            "spec.rules[0].http.paths[1].path",
            "FieldValueInvalid",
            "Invalid value: \"api\": must be an absolute path"
        )),
        "{c:?}"
    );
    assert!(
        c.contains(&cause(
            "spec.rules[0].http.paths[1].backend",
            "FieldValueRequired",
            "Required value: port name or number is required"
        )),
        "{c:?}"
    );
    assert_eq!(c[0].0, "spec.rules[0].host");
    // a Job's name becomes a template label value, so it is at most 63 characters
    let long = "j".repeat(64);
    let job = json!({"metadata": {"name": long}, "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}});
    let (code, s) = env
        .json("POST", "/apis/batch/v1/namespaces/default/jobs", &job)
        .await;
    assert_eq!(code, 422);
    assert!(
        causes(&s).contains(&cause(
            "spec.template.labels",
            "FieldValueInvalid",
            &format!("Invalid value: \"{long}\": must be no more than 63 characters")
        )),
        "{s}"
    );
    // a Job's template restarts Always by default, which a Job refuses
    let job = json!({"metadata": {"name": "j"}, "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}});
    let (code, s) = env
        .json("POST", "/apis/batch/v1/namespaces/default/jobs", &job)
        .await;
    assert_eq!(code, 422);
    assert_eq!(
        causes(&s),
        vec![cause(
            "spec.template.spec.restartPolicy",
            "FieldValueNotSupported",
            "Unsupported value: \"Always\": supported values: \"OnFailure\", \"Never\""
        )]
    );
    let cron = json!({"metadata": {"name": "c"}, "spec": {"schedule": "every minute", "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox"}]}}}}}});
    let (code, s) = env
        .json("POST", "/apis/batch/v1/namespaces/default/cronjobs", &cron)
        .await;
    assert_eq!(code, 422);
    assert_eq!(
        causes(&s),
        vec![cause(
            "spec.schedule",
            "FieldValueInvalid",
            "Invalid value: \"every minute\": expected exactly 5 fields, found 2: [every minute]"
        )]
    );
    let rb = json!({"metadata": {"name": "rb"}, "roleRef": {"kind": "Role", "name": "r"}, "subjects": [{"kind": "Robot", "name": "x"}, {"kind": "User", "name": "alice"}]});
    let (code, s) = env
        .json(
            "POST",
            "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
            &rb,
        )
        .await;
    assert_eq!(code, 422, "{s}");
    assert_eq!(
        causes(&s),
        vec![cause(
            "subjects[0].kind",
            "FieldValueNotSupported",
            "Unsupported value: \"Robot\": supported values: \"ServiceAccount\", \"User\", \"Group\""
        )]
    );
    let rb = json!({"metadata": {"name": "rb"}, "roleRef": {"kind": "Role", "name": "r"}, "subjects": [{"kind": "User", "name": "alice"}]});
    let (code, s) = env
        .json(
            "POST",
            "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
            &rb,
        )
        .await;
    assert_eq!(code, 201, "{s}");
    assert_eq!(s["roleRef"]["apiGroup"], "rbac.authorization.k8s.io");
    assert_eq!(s["subjects"][0]["apiGroup"], "rbac.authorization.k8s.io");
    let (code, s) = env
        .raw(
            "PATCH",
            "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings/rb",
            "application/merge-patch+json",
            br#"{"roleRef":{"name":"other"}}"#.to_vec(),
        )
        .await;
    assert_eq!(code, 422);
    assert_eq!(
        causes(&s)[0].2,
        "Invalid value: rbac.RoleRef{APIGroup:\"rbac.authorization.k8s.io\", Kind:\"Role\", Name:\"other\"}: cannot change roleRef"
    );
}

#[tokio::test]
async fn decoding_refuses_bad_base64_and_quantities_and_canonicalises_quantities() {
    let env = Env::start().await;
    let (code, s) = env
        .json(
            "POST",
            "/api/v1/namespaces/default/secrets",
            &json!({"metadata": {"name": "s"}, "data": {"a": "not base64!"}}),
        )
        .await;
    assert_eq!(
        (code.as_u16(), s["reason"].as_str()),
        (400, Some("BadRequest")),
        "{s}"
    );
    assert_eq!(
        s["message"],
        "Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data at input byte 3"
    );
    let mut d = deployment("web");
    d["spec"]["template"]["spec"]["containers"][0]["resources"] =
        json!({"limits": {"cpu": "lots"}});
    let (code, s) = env.json("POST", DEPLOYS, &d).await;
    assert_eq!(code, 400);
    assert_eq!(
        s["message"],
        "Deployment in version \"v1\" cannot be handled as a Deployment: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    );
    d["spec"]["template"]["spec"]["containers"][0]["resources"] = json!({"limits": {"cpu": "1000m", "memory": "1024Mi"}, "requests": {"cpu": 0.5, "memory": "1.5Gi"}});
    let (code, s) = env.json("POST", DEPLOYS, &d).await;
    assert_eq!(code, 422, "requests over limits: {s}");
    assert_eq!(
        causes(&s),
        vec![cause(
            "spec.template.spec.containers[0].resources.requests",
            "FieldValueInvalid",
            "Invalid value: \"1536Mi\": must be less than or equal to memory limit of 1Gi"
        )]
    );
    d["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["memory"] =
        json!("1e3");
    let (code, s) = env.json("POST", DEPLOYS, &d).await;
    assert_eq!(code, 201, "{s}");
    let out = env
        .kubectl(&["get", "deployment", "web", "-o", "yaml"])
        .await
        .ok();
    let live = yaml(&out.stdout);
    assert_eq!(
        live["spec"]["template"]["spec"]["containers"][0]["resources"],
        json!({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m", "memory": "1e3"}})
    );
    let pvc = json!({"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "2048Mi"}}}});
    let (_, s) = env
        .json(
            "POST",
            "/api/v1/namespaces/default/persistentvolumeclaims",
            &pvc,
        )
        .await;
    assert_eq!(s["spec"]["resources"]["requests"]["storage"], "2Gi");
}

#[tokio::test]
async fn field_validation_strict_warn_and_ignore() {
    let env = Env::start().await;
    let mut d = deployment("web");
    d["spec"]["bogus"] = json!(1);
    d["spec"]["template"]["spec"]["containers"][0]["colour"] = json!("red");
    let (code, s) = env
        .json("POST", &format!("{DEPLOYS}?fieldValidation=Strict"), &d)
        .await;
    assert_eq!(code, 400);
    // in document order: `bogus` was added after `template`
    assert_eq!(
        s["message"],
        "Deployment in version \"v1\" cannot be handled as a Deployment: strict decoding error: unknown field \"spec.template.spec.containers[0].colour\", unknown field \"spec.bogus\""
    );
    let (code, s) = env
        .json("POST", &format!("{DEPLOYS}?fieldValidation=Ignore"), &d)
        .await;
    assert_eq!(code, 201, "{s}");
    assert!(
        s["spec"].get("bogus").is_none(),
        "unknown fields are never stored"
    );
    let (code, _) = env
        .json("POST", &format!("{DEPLOYS}?fieldValidation=Sloppy"), &d)
        .await;
    assert_eq!(code, 400);
    // kubectl validates strictly by default, and warns with --validate=warn
    let file = env.write("d.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: api}\nspec:\n  bogus: 1\n  selector: {matchLabels: {app: api}}\n  template:\n    metadata: {labels: {app: api}}\n    spec: {containers: [{name: app, image: nginx}]}\n");
    let path = file.to_str().unwrap();
    let out = env.kubectl(&["apply", "-f", path]).await;
    assert_ne!(out.code, 0);
    assert!(
        out.stderr
            .contains("strict decoding error: unknown field \"spec.bogus\""),
        "{out:?}"
    );
    let out = env
        .kubectl(&["apply", "--validate=warn", "-f", path])
        .await
        .ok();
    assert!(
        out.stderr.contains("Warning: unknown field \"spec.bogus\""),
        "{out:?}"
    );
    let out = env
        .kubectl(&["get", "deployment", "api", "-o", "json"])
        .await
        .ok();
    let live: Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(live["spec"].get("bogus").is_none());
}

#[tokio::test]
async fn kubectl_shows_the_causes_on_apply_server_side_apply_and_dry_run() {
    let env = Env::start().await;
    let file = env.write("d.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: app}]}\n");
    let path = file.to_str().unwrap();
    for args in [
        vec!["apply", "-f", path],
        vec!["apply", "--server-side", "-f", path],
        vec!["create", "--dry-run=server", "-f", path],
    ] {
        let out = env.kubectl(&args).await;
        assert_ne!(out.code, 0, "{args:?}");
        assert!(
            out.stderr.contains("The Deployment \"web\" is invalid: "),
            "{args:?}: {out:?}"
        );
        for line in [
            "* spec.selector: Required value",
            "* spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"web\"}: `selector` does not match template `labels`",
            "* spec.template.spec.containers[0].image: Required value",
        ] {
            assert!(
                out.stderr.contains(line),
                "{args:?}: missing {line}: {}",
                out.stderr
            );
        }
    }
    let out = env
        .kubectl(&["get", "deployments", "-o", "name"])
        .await
        .ok();
    assert_eq!(out.stdout.trim(), "");
}

#[tokio::test]
async fn the_thousandth_valid_write_still_passes_and_the_thousandth_bad_one_still_fails() {
    let env = Env::start().await;
    let client = env.cluster.client().await.unwrap();
    for i in 0..1000 {
        let name = format!("cm-{i}");
        let good =
            json!({"metadata": {"name": name, "labels": {"n": i.to_string()}}, "data": {"k": "v"}});
        let body = serde_json::to_vec(&good).unwrap();
        let (code, _) = common::raw_with(&client, "POST", CMS, "application/json", body).await;
        assert_eq!(code, 201, "{i}");
        let bad = json!({"metadata": {"name": format!("Bad-{i}")}});
        let body = serde_json::to_vec(&bad).unwrap();
        let (code, _) = common::raw_with(&client, "POST", CMS, "application/json", body).await;
        assert_eq!(code, 422, "{i}");
    }
}

#[tokio::test]
async fn secrets_fold_string_data_and_network_policies_get_policy_types() {
    let env = Env::start().await;
    let file = env.write(
        "s.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {a: MQ==, b: MQ==}\nstringData: {b: two, c: three}\n",
    );
    env.kubectl(&["apply", "-f", file.to_str().unwrap()])
        .await
        .ok();
    let out = env
        .kubectl(&["get", "secret", "s", "-o", "json"])
        .await
        .ok();
    let live: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        live["data"],
        json!({"a": "MQ==", "b": "dHdv", "c": "dGhyZWU="})
    );
    assert!(live.get("stringData").is_none());
    // a second apply sends stringData again (kubectl says "configured", as with a real
    // server) but the stored Secret does not change
    env.kubectl(&["apply", "-f", file.to_str().unwrap()])
        .await
        .ok();
    let out = env
        .kubectl(&["get", "secret", "s", "-o", "json"])
        .await
        .ok();
    let again: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(again["data"], live["data"]);
    assert_eq!(
        again["metadata"]["resourceVersion"],
        live["metadata"]["resourceVersion"]
    );
    let np = json!({"metadata": {"name": "np"}, "spec": {"podSelector": {}, "ingress": [{"ports": [{"port": 80}]}]}});
    let (code, s) = env
        .json(
            "POST",
            "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies",
            &np,
        )
        .await;
    assert_eq!(code, 201, "{s}");
    assert_eq!(s["spec"]["policyTypes"], json!(["Ingress"]));
    assert_eq!(s["spec"]["ingress"][0]["ports"][0]["protocol"], "TCP");
    let np = json!({"metadata": {"name": "np2"}, "spec": {"podSelector": {}, "egress": [{}]}});
    let (_, s) = env
        .json(
            "POST",
            "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies",
            &np,
        )
        .await;
    assert_eq!(s["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
}

#[tokio::test]
async fn autoscalers_need_a_target_and_sane_bounds() {
    let env = Env::start().await;
    // autoscaling/v1 is not served yet (see the README)
    for version in ["v2"] {
        let hpa = json!({"apiVersion": format!("autoscaling/{version}"), "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web"}, "spec": {"minReplicas": 5, "maxReplicas": 2, "scaleTargetRef": {"apiVersion": "apps/v1", "name": "web"}}});
        let path =
            format!("/apis/autoscaling/{version}/namespaces/default/horizontalpodautoscalers");
        let (code, s) = env.json("POST", &path, &hpa).await;
        assert_eq!(code, 422, "{version}: {s}");
        assert_eq!(
            causes(&s),
            vec![
                cause(
                    "spec.maxReplicas",
                    "FieldValueInvalid",
                    "Invalid value: 2: must be greater than or equal to `minReplicas`"
                ),
                cause(
                    "spec.scaleTargetRef.kind",
                    "FieldValueRequired",
                    "Required value"
                ),
            ],
            "{version}"
        );
    }
}

#[tokio::test]
async fn hostile_metadata_is_refused_without_storing_anything() {
    let env = Env::start().await;
    let big = "x".repeat(300 * 1024);
    let (code, s) = env
        .json(
            "POST",
            CMS,
            &json!({"metadata": {"name": "big", "annotations": {"a": big}}}),
        )
        .await;
    assert_eq!(code, 422);
    assert_eq!(
        causes(&s),
        vec![cause(
            "metadata.annotations",
            "FieldValueTooLong",
            "Too long: must have at most 262144 bytes"
        )]
    );
    let long = "a".repeat(254);
    let (code, s) = env
        .json("POST", CMS, &json!({"metadata": {"name": long}}))
        .await;
    assert_eq!(code, 422);
    assert_eq!(
        causes(&s)[0].2,
        format!("Invalid value: \"{long}\": must be no more than 253 characters")
    );
    let owner = json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": ""});
    let (code, s) = env
        .json(
            "POST",
            CMS,
            &json!({"metadata": {"name": "owned", "ownerReferences": [owner]}}),
        )
        .await;
    assert_eq!(code, 422);
    assert_eq!(
        causes(&s),
        vec![cause(
            "metadata.ownerReferences.uid",
            "FieldValueInvalid",
            "Invalid value: \"\": must not be empty"
        )]
    );
    let (code, s) = env
        .json("POST", CMS, &json!({"metadata": {"name": "fin", "finalizers": ["a/b/c", "orphan", "foregroundDeletion"]}}))
        .await;
    assert_eq!(code, 422);
    let c = causes(&s);
    assert_eq!(c[0].0, "metadata.finalizers");
    assert_eq!(
        c[1].2,
        "Invalid value: []string{\"a/b/c\", \"orphan\", \"foregroundDeletion\"}: finalizer orphan and foregroundDeletion cannot be both set"
    );
    let (_, list) = env.json("GET", CMS, &Value::Null).await;
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["kube-root-ca.crt"]);
}
