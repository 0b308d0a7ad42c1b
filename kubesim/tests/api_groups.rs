//! Every group/version a 1.32 API server serves (issue #14 item 5): resources served at each
//! of their versions from one storage, the authentication group, EndpointSlices, the groups
//! kubesim stores without controllers, and aggregated discovery — raw HTTPS and the real
//! kubectl 1.32.

mod common;

use common::Env;
use serde_json::{Value, json};

const HPAS_V1: &str = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers";
const HPAS_V2: &str = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers";

fn hpa_v2() -> Value {
    json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 2, "maxReplicas": 5,
            "metrics": [
                {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}},
                {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1Gi"}}}],
            "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}})
}

#[tokio::test]
async fn hpas_are_one_object_at_v1_and_v2() {
    let env = Env::start().await;
    let (code, created) = env.json("POST", HPAS_V2, &hpa_v2()).await;
    assert_eq!(code, 201, "{created}");

    // Read through v1: the v1 shape, CPU as targetCPUUtilizationPercentage.
    let (code, v1) = env.raw("GET", &format!("{HPAS_V1}/web"), "", vec![]).await;
    assert_eq!(code, 200, "{v1}");
    assert_eq!(v1["apiVersion"], "autoscaling/v1");
    assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 60);
    assert_eq!(v1["spec"]["minReplicas"], 2);
    assert!(v1["spec"].get("metrics").is_none());
    assert_eq!(v1["status"]["currentReplicas"], 0);
    let ann = &v1["metadata"]["annotations"];
    assert!(
        ann["autoscaling.alpha.kubernetes.io/metrics"]
            .as_str()
            .unwrap()
            .contains("\"targetAverageValue\":\"1Gi\""),
        "{ann}"
    );
    assert_eq!(v1["metadata"]["uid"], created["metadata"]["uid"]);

    // kubectl names both versions and lists one object.
    let out = env
        .kubectl(&[
            "get",
            "horizontalpodautoscalers.v1.autoscaling",
            "web",
            "-o",
            "jsonpath={.spec.targetCPUUtilizationPercentage}",
        ])
        .await
        .ok();
    assert_eq!(out.stdout, "60");
    let out = env.kubectl(&["get", "hpa", "-o", "name"]).await.ok();
    assert_eq!(out.stdout.trim(), "horizontalpodautoscaler.autoscaling/web");

    // Write through v1: the CPU target changes, the memory metric and behavior survive.
    let mut edit = v1.clone();
    edit["spec"]["targetCPUUtilizationPercentage"] = json!(70);
    let (code, put) = env.json("PUT", &format!("{HPAS_V1}/web"), &edit).await;
    assert_eq!(code, 200, "{put}");
    assert_eq!(put["spec"]["targetCPUUtilizationPercentage"], 70);
    let (_, v2) = env.raw("GET", &format!("{HPAS_V2}/web"), "", vec![]).await;
    let metrics = v2["spec"]["metrics"].as_array().unwrap();
    assert_eq!(metrics.len(), 2, "{v2}");
    assert_eq!(metrics[0]["resource"]["target"]["averageUtilization"], 70);
    assert_eq!(metrics[1]["resource"]["target"]["averageValue"], "1Gi");
    assert_eq!(
        v2["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"],
        60
    );
    assert!(v2["metadata"].get("annotations").is_none(), "{v2}");

    // A v1 HPA with no target gets CPU at 80%, seen through v2.
    let bare = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "bare"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "w"}, "maxReplicas": 3}});
    let (code, _) = env.json("POST", HPAS_V1, &bare).await;
    assert_eq!(code, 201);
    let (_, v2) = env.raw("GET", &format!("{HPAS_V2}/bare"), "", vec![]).await;
    assert_eq!(
        v2["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
        80
    );
    assert_eq!(v2["spec"]["minReplicas"], 1);
}

#[tokio::test]
async fn hostile_v1_hpas_are_refused_with_v2_field_paths_or_cleaned() {
    let env = Env::start().await;
    // maxReplicas below minReplicas: refused whichever version it comes through.
    let bad = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "bad"},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "w"}, "minReplicas": 4, "maxReplicas": 3}});
    let (code, err) = env.json("POST", HPAS_V1, &bad).await;
    assert_eq!(code, 422, "{err}");
    assert_eq!(err["details"]["causes"][0]["field"], "spec.maxReplicas");
    let (code, _) = env.raw("GET", &format!("{HPAS_V2}/bad"), "", vec![]).await;
    assert_eq!(code, 404);
    // Garbage in the conversion annotations is dropped, never stored or served back.
    let junk = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "junk", "annotations": {
            "autoscaling.alpha.kubernetes.io/metrics": "{not json",
            "autoscaling.alpha.kubernetes.io/behavior": "[1,2]",
            "keep": "me"}},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "w"}, "maxReplicas": 3,
            "targetCPUUtilizationPercentage": 50}});
    let (code, out) = env.json("POST", HPAS_V1, &junk).await;
    assert_eq!(code, 201, "{out}");
    let (_, v2) = env.raw("GET", &format!("{HPAS_V2}/junk"), "", vec![]).await;
    assert_eq!(v2["metadata"]["annotations"], json!({"keep": "me"}));
    assert_eq!(v2["spec"]["metrics"].as_array().unwrap().len(), 1);
    assert!(v2["spec"].get("behavior").is_none());
}

#[tokio::test]
async fn a_thousand_v1_round_trips_keep_every_v2_field() {
    let env = Env::start().await;
    let (code, _) = env.json("POST", HPAS_V2, &hpa_v2()).await;
    assert_eq!(code, 201);
    for i in 0..1000 {
        let (_, mut v1) = env.raw("GET", &format!("{HPAS_V1}/web"), "", vec![]).await;
        v1["spec"]["maxReplicas"] = json!(5 + i % 7);
        let (code, out) = env.json("PUT", &format!("{HPAS_V1}/web"), &v1).await;
        assert_eq!(code, 200, "round trip {i}: {out}");
    }
    let (_, v2) = env.raw("GET", &format!("{HPAS_V2}/web"), "", vec![]).await;
    let mut want = hpa_v2()["spec"].clone();
    want["maxReplicas"] = json!(5 + 999 % 7);
    // v2 defaulting fills the behavior's unset rules; compare what was written.
    assert_eq!(v2["spec"]["metrics"], want["metrics"]);
    assert_eq!(v2["spec"]["maxReplicas"], want["maxReplicas"]);
    assert_eq!(
        v2["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"],
        60
    );
    assert!(v2["metadata"].get("annotations").is_none(), "{v2}");
}

#[tokio::test]
async fn kubectl_create_token_authenticates_as_the_service_account() {
    let env = Env::start().await;
    env.kubectl(&["create", "serviceaccount", "deployer", "-n", "team-a"])
        .await
        .ok();
    let token = env
        .kubectl(&["create", "token", "deployer", "-n", "team-a"])
        .await
        .ok()
        .stdout
        .trim()
        .to_string();
    assert_eq!(token.split('.').count(), 3, "a JWT: {token}");
    let who = env
        .kubectl_with_token(&token, &["auth", "whoami", "-o", "json"])
        .await
        .ok();
    let review: Value = serde_json::from_str(&who.stdout).unwrap();
    assert_eq!(review["kind"], "SelfSubjectReview");
    assert_eq!(
        review["status"]["userInfo"]["username"],
        "system:serviceaccount:team-a:deployer"
    );
    // RBAC applies to it like any ServiceAccount: nothing until a binding grants it.
    let denied = env
        .kubectl_with_token(&token, &["get", "configmaps", "-n", "team-a"])
        .await;
    assert_ne!(denied.code, 0);
    assert!(
        denied.stderr.contains(
            "User \"system:serviceaccount:team-a:deployer\" cannot list resource \"configmaps\""
        ),
        "{denied:?}"
    );
    let binding = env.write(
        "binding.yaml",
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: d, namespace: team-a}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}\nsubjects: [{kind: ServiceAccount, name: deployer, namespace: team-a}]\n",
    );
    env.kubectl(&["apply", "-f", binding.to_str().unwrap()])
        .await
        .ok();
    env.kubectl_with_token(&token, &["get", "configmaps", "-n", "team-a"])
        .await
        .ok();
    // The admin's own identity.
    let me = env.kubectl(&["auth", "whoami"]).await.ok();
    assert!(me.stdout.contains("kubesim-admin"), "{me:?}");
}

#[tokio::test]
async fn hostile_token_requests_are_refused_and_stale_tokens_stop_working() {
    let env = Env::start().await;
    env.kubectl(&["create", "serviceaccount", "sa", "-n", "team-a"])
        .await
        .ok();
    let short = env
        .kubectl(&["create", "token", "sa", "-n", "team-a", "--duration=1m"])
        .await;
    assert_ne!(short.code, 0);
    assert!(
        short.stderr.contains(
            "TokenRequest.authentication.k8s.io \"sa\" is invalid: spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes"
        ),
        "{short:?}"
    );
    let missing = env
        .kubectl(&["create", "token", "nope", "-n", "team-a"])
        .await;
    assert!(
        missing
            .stderr
            .contains("serviceaccounts \"nope\" not found"),
        "{missing:?}"
    );
    let unbound = env
        .kubectl(&[
            "create",
            "token",
            "sa",
            "-n",
            "team-a",
            "--bound-object-kind=Pod",
            "--bound-object-name=ghost",
        ])
        .await;
    assert!(
        unbound.stderr.contains("pods \"ghost\" not found"),
        "{unbound:?}"
    );
    // A token for another audience does not authenticate to the API server.
    let vault = env
        .kubectl(&["create", "token", "sa", "-n", "team-a", "--audience=vault"])
        .await
        .ok()
        .stdout;
    let refused = env
        .kubectl_with_token(vault.trim(), &["auth", "whoami"])
        .await;
    assert!(refused.stderr.contains("Unauthorized"), "{refused:?}");
    // A tampered token is refused.
    let token = env
        .kubectl(&["create", "token", "sa", "-n", "team-a"])
        .await
        .ok()
        .stdout
        .trim()
        .to_string();
    let mut tampered = token.clone();
    tampered.pop();
    tampered.push(if token.ends_with('A') { 'B' } else { 'A' });
    let refused = env.kubectl_with_token(&tampered, &["auth", "whoami"]).await;
    assert!(refused.stderr.contains("Unauthorized"), "{refused:?}");
    // Deleting and recreating the ServiceAccount (a new uid) invalidates its old tokens.
    env.kubectl_with_token(&token, &["auth", "whoami"])
        .await
        .ok();
    env.kubectl(&["delete", "serviceaccount", "sa", "-n", "team-a"])
        .await
        .ok();
    env.kubectl(&["create", "serviceaccount", "sa", "-n", "team-a"])
        .await
        .ok();
    let stale = env.kubectl_with_token(&token, &["auth", "whoami"]).await;
    assert!(stale.stderr.contains("Unauthorized"), "{stale:?}");
    // Only create is served on the token subresource.
    let (code, _) = env
        .raw(
            "GET",
            "/api/v1/namespaces/team-a/serviceaccounts/sa/token",
            "",
            vec![],
        )
        .await;
    assert_eq!(code, 405);
}

#[tokio::test]
async fn a_thousand_token_requests_each_authenticate() {
    let env = Env::start().await;
    let (code, _) = env
        .json(
            "POST",
            "/api/v1/namespaces/team-a/serviceaccounts",
            &json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "bot"}}),
        )
        .await;
    assert_eq!(code, 201);
    let mut tokens = std::collections::BTreeSet::new();
    for i in 0..1000 {
        let (code, out) = env
            .json(
                "POST",
                "/api/v1/namespaces/team-a/serviceaccounts/bot/token",
                &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                    "spec": {"expirationSeconds": 600 + i}}),
            )
            .await;
        assert_eq!(code, 201, "request {i}: {out}");
        let token = out["status"]["token"].as_str().unwrap().to_string();
        assert!(tokens.insert(token.clone()), "token {i} repeats");
        if i % 100 == 99 {
            let (code, review) = env
                .json(
                    "POST",
                    "/apis/authentication.k8s.io/v1/tokenreviews",
                    &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                        "spec": {"token": token}}),
                )
                .await;
            assert_eq!(code, 201);
            assert_eq!(review["status"]["authenticated"], true, "{review}");
            assert_eq!(
                review["status"]["user"]["username"],
                "system:serviceaccount:team-a:bot"
            );
        }
    }
}

/// A GET with an `Accept` header: (status, content type, parsed body).
async fn get_accepting(env: &Env, path: &str, accept: &str) -> (u16, String, Value) {
    use http_body_util::BodyExt;
    let client = env.cluster.client().await.unwrap();
    let req = hyper::http::Request::builder()
        .uri(path)
        .header("accept", accept)
        .body(kube::client::Body::empty())
        .unwrap();
    let resp = client.send(req).await.expect("request sent");
    let status = resp.status().as_u16();
    let content_type = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        content_type,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

#[tokio::test]
async fn aggregated_discovery_lists_every_group_version_resource_and_subresource() {
    let env = Env::start().await;
    let (code, content_type, apis) = get_accepting(&env, "/apis", AGGREGATED).await;
    assert_eq!(code, 200);
    assert_eq!(
        content_type,
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    );
    assert_eq!(apis["kind"], "APIGroupDiscoveryList");
    assert_eq!(apis["apiVersion"], "apidiscovery.k8s.io/v2");
    let groups: Vec<&str> = apis["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["metadata"]["name"].as_str().unwrap())
        .collect();
    for wanted in [
        "apps",
        "autoscaling",
        "admissionregistration.k8s.io",
        "apiregistration.k8s.io",
        "authentication.k8s.io",
        "certificates.k8s.io",
        "discovery.k8s.io",
        "flowcontrol.apiserver.k8s.io",
        "node.k8s.io",
        "storage.k8s.io",
    ] {
        assert!(groups.contains(&wanted), "{wanted} missing from {groups:?}");
    }
    let autoscaling = apis["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["metadata"]["name"] == "autoscaling")
        .unwrap();
    let versions: Vec<&str> = autoscaling["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_str().unwrap())
        .collect();
    assert_eq!(versions, ["v2", "v1"], "preferred version first");
    let apps = apis["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["metadata"]["name"] == "apps")
        .unwrap();
    let deployments = apps["versions"][0]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == "deployments")
        .unwrap();
    assert_eq!(deployments["scope"], "Namespaced");
    assert_eq!(deployments["responseKind"]["kind"], "Deployment");
    assert_eq!(deployments["shortNames"][0], "deploy");
    let subs: Vec<&str> = deployments["subresources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["subresource"].as_str().unwrap())
        .collect();
    assert_eq!(subs, ["status", "scale"]);

    let (_, _, core) = get_accepting(&env, "/api", AGGREGATED).await;
    let core_resources = core["items"][0]["versions"][0]["resources"]
        .as_array()
        .unwrap();
    let sa = core_resources
        .iter()
        .find(|r| r["resource"] == "serviceaccounts")
        .unwrap();
    assert_eq!(sa["subresources"][0]["subresource"], "token");
    assert_eq!(
        sa["subresources"][0]["responseKind"]["kind"],
        "TokenRequest"
    );
    assert!(
        core_resources
            .iter()
            .any(|r| r["resource"] == "replicationcontrollers")
    );

    // A client that does not ask gets the legacy documents.
    let (_, content_type, legacy) = get_accepting(&env, "/apis", "application/json").await;
    assert_eq!(content_type, "application/json");
    assert_eq!(legacy["kind"], "APIGroupList");
    // A malformed or partial aggregated Accept header is not mistaken for one.
    let (_, _, partial) = get_accepting(
        &env,
        "/apis",
        "application/json;g=apidiscovery.k8s.io;as=APIGroupDiscoveryList",
    )
    .await;
    assert_eq!(partial["kind"], "APIGroupList");

    // kubectl 1.32 reads everything from the two aggregated documents.
    let out = env.kubectl(&["api-resources", "-v=6"]).await.ok();
    let requests = out.stderr.matches("round_trippers").count();
    assert_eq!(requests, 2, "{}", out.stderr);
    assert!(out.stdout.contains("endpointslices"), "{}", out.stdout);
}

/// The EndpointSlices of a Service in team-a, as kubectl lists them (JSON).
async fn slices_of(env: &Env, service: &str) -> String {
    let selector = format!("kubernetes.io/service-name={service}");
    env.kubectl(&[
        "get",
        "endpointslices",
        "-n",
        "team-a",
        "-l",
        &selector,
        "-o",
        "json",
    ])
    .await
    .ok()
    .stdout
}

#[tokio::test]
async fn endpoint_slices_follow_services_and_their_pods() {
    let env = Env::start().await;
    let app = env.write(
        "app.yaml",
        r#"apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: team-a}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: app, image: nginx, ports: [{name: http, containerPort: 8080}]}]}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: team-a, labels: {tier: front}}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: http}]
---
apiVersion: v1
kind: Service
metadata: {name: nobody, namespace: team-a}
spec:
  selector: {app: nobody}
  ports: [{port: 80, name: x}]
---
apiVersion: v1
kind: Service
metadata: {name: manual, namespace: team-a}
spec:
  ports: [{port: 80}]
"#,
    );
    env.kubectl(&["apply", "-f", app.to_str().unwrap()])
        .await
        .ok();
    // Wait until both Pods are ready and listed.
    let mut list = Value::Null;
    for _ in 0..100 {
        list = serde_json::from_str(&slices_of(&env, "web").await).unwrap();
        let ready = list["items"][0]["endpoints"].as_array().map_or(0, |e| {
            e.iter()
                .filter(|e| e["conditions"]["ready"] == true)
                .count()
        });
        if ready == 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{list}");
    let slice = &items[0];
    assert_eq!(slice["addressType"], "IPv4");
    assert_eq!(
        slice["ports"],
        json!([{"name": "", "port": 8080, "protocol": "TCP"}])
    );
    assert_eq!(slice["metadata"]["labels"]["tier"], "front");
    assert_eq!(
        slice["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"],
        "endpointslice-controller.k8s.io"
    );
    assert_eq!(slice["metadata"]["ownerReferences"][0]["kind"], "Service");
    assert!(
        slice["metadata"]["name"]
            .as_str()
            .unwrap()
            .starts_with("web-")
    );
    let endpoint = &slice["endpoints"][0];
    assert_eq!(endpoint["targetRef"]["kind"], "Pod");
    assert_eq!(endpoint["conditions"]["serving"], true);
    // The Endpoints and the slice list the same addresses.
    let ep = env
        .kubectl(&[
            "get",
            "endpoints",
            "web",
            "-n",
            "team-a",
            "-o",
            "jsonpath={.subsets[0].addresses[*].ip}",
        ])
        .await
        .ok()
        .stdout;
    let mut from_endpoints: Vec<&str> = ep.split_whitespace().collect();
    let mut from_slice: Vec<&str> = slice["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["addresses"][0].as_str().unwrap())
        .collect();
    from_endpoints.sort();
    from_slice.sort();
    assert_eq!(from_endpoints, from_slice);

    // A Service that selects nothing has one placeholder slice; one without a selector none.
    let nobody: Value = serde_json::from_str(&slices_of(&env, "nobody").await).unwrap();
    assert_eq!(nobody["items"].as_array().unwrap().len(), 1);
    assert!(nobody["items"][0]["endpoints"].is_null());
    let manual: Value = serde_json::from_str(&slices_of(&env, "manual").await).unwrap();
    assert!(manual["items"].as_array().unwrap().is_empty());

    // kubectl prints the server's columns.
    let table = env
        .kubectl(&["get", "endpointslices", "-n", "team-a"])
        .await
        .ok();
    assert!(
        table.stdout.starts_with("NAME") && table.stdout.contains("ADDRESSTYPE   PORTS"),
        "{}",
        table.stdout
    );

    // Deleting the Service takes its slices along (they are owned by it).
    env.kubectl(&["delete", "service", "web", "-n", "team-a"])
        .await
        .ok();
    let gone: Value = serde_json::from_str(&slices_of(&env, "web").await).unwrap();
    assert!(gone["items"].as_array().unwrap().is_empty(), "{gone}");
}

#[tokio::test]
async fn slices_stay_one_per_service_through_a_hundred_scalings() {
    let env = Env::start().await;
    let app = env.write(
        "app.yaml",
        r#"apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: team-a}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: app, image: nginx}]}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: team-a}
spec:
  selector: {app: web}
  ports: [{port: 80}]
"#,
    );
    env.kubectl(&["apply", "-f", app.to_str().unwrap()])
        .await
        .ok();
    let scale = "/apis/apps/v1/namespaces/team-a/deployments/web/scale";
    for i in 0..100 {
        let replicas = 1 + i % 4;
        let (code, out) = env
            .json(
                "PUT",
                scale,
                &json!({"apiVersion": "autoscaling/v1", "kind": "Scale",
                    "metadata": {"name": "web", "namespace": "team-a"},
                    "spec": {"replicas": replicas}}),
            )
            .await;
        assert_eq!(code, 200, "scaling {i}: {out}");
    }
    // The last scale wants 4 Pods; wait until the slice lists 4 ready endpoints.
    let path = "/apis/discovery.k8s.io/v1/namespaces/team-a/endpointslices";
    let mut slices = Value::Null;
    for _ in 0..200 {
        (_, slices) = env.raw("GET", path, "", vec![]).await;
        let ready = slices["items"][0]["endpoints"].as_array().map_or(0, |e| {
            e.iter()
                .filter(|e| e["conditions"]["ready"] == true)
                .count()
        });
        if slices["items"].as_array().map_or(0, Vec::len) == 1 && ready == 4 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let items = slices["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "one slice for one port set: {slices}");
    let ips: std::collections::BTreeSet<&str> = items[0]["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["conditions"]["ready"] == true)
        .map(|e| e["addresses"][0].as_str().unwrap())
        .collect();
    assert_eq!(ips.len(), 4, "{slices}");
}

#[tokio::test]
async fn administrators_kinds_are_served_defaulted_and_validated() {
    let env = Env::start().await;
    let good = env.write(
        "good.yaml",
        r#"apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: policy}
webhooks:
- name: policy.example.com
  clientConfig: {service: {name: p, namespace: default}}
  rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  sideEffects: None
  admissionReviewVersions: [v1]
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: gvisor}
handler: runsc
---
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: ebs.csi.aws.com}
spec: {}
---
apiVersion: v1
kind: ReplicationController
metadata: {name: rc, namespace: team-a}
spec:
  replicas: 1
  template:
    metadata: {labels: {app: rc}}
    spec: {containers: [{name: a, image: nginx}]}
---
apiVersion: v1
kind: PodTemplate
metadata: {name: pt, namespace: team-a}
template:
  metadata: {labels: {app: pt}}
  spec: {containers: [{name: a, image: nginx}]}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: wardn}
spec: {priorityLevelConfiguration: {name: workload-low}}
"#,
    );
    let out = env
        .kubectl(&["apply", "--server-side", "-f", good.to_str().unwrap()])
        .await
        .ok();
    assert_eq!(
        out.stdout.matches("serverside-applied").count(),
        6,
        "{out:?}"
    );
    let hook: Value = serde_json::from_str(
        &env.kubectl(&[
            "get",
            "validatingwebhookconfiguration",
            "policy",
            "-o",
            "json",
        ])
        .await
        .ok()
        .stdout,
    )
    .unwrap();
    let w = &hook["webhooks"][0];
    assert_eq!(
        (&w["failurePolicy"], &w["matchPolicy"], &w["timeoutSeconds"]),
        (&json!("Fail"), &json!("Equivalent"), &json!(10))
    );
    assert_eq!(w["clientConfig"]["service"]["port"], 443);
    assert_eq!(w["rules"][0]["scope"], "*");
    let csi = env
        .kubectl(&[
            "get",
            "csidriver",
            "ebs.csi.aws.com",
            "-o",
            "jsonpath={.spec.attachRequired} {.spec.fsGroupPolicy} {.spec.volumeLifecycleModes}",
        ])
        .await
        .ok();
    assert_eq!(csi.stdout, "true ReadWriteOnceWithFSType [\"Persistent\"]");
    let rc = env
        .kubectl(&[
            "get",
            "rc",
            "rc",
            "-n",
            "team-a",
            "-o",
            "jsonpath={.spec.selector.app}",
        ])
        .await
        .ok();
    assert_eq!(
        rc.stdout, "rc",
        "the selector defaults to the template's labels"
    );
    let fs = env
        .kubectl(&[
            "get",
            "flowschema",
            "wardn",
            "-o",
            "jsonpath={.spec.matchingPrecedence}",
        ])
        .await
        .ok();
    assert_eq!(fs.stdout, "1000");
    let services = env.kubectl(&["get", "apiservices"]).await.ok();
    assert!(services.stdout.contains("v1.apps"), "{}", services.stdout);
    assert!(
        services.stdout.contains("Local     True"),
        "{}",
        services.stdout
    );

    let bad = env.write(
        "bad.yaml",
        r#"apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: bad}
webhooks:
- name: bad
  clientConfig: {}
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: bad}
handler: "Not_OK"
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1.wrong}
spec: {group: metrics.k8s.io, version: v1beta1, groupPriorityMinimum: 0, versionPriority: 100}
---
apiVersion: storage.k8s.io/v1
kind: VolumeAttachment
metadata: {name: va}
spec: {attacher: ebs.csi.aws.com, source: {}}
---
apiVersion: v1
kind: ReplicationController
metadata: {name: bad, namespace: team-a}
spec:
  selector: {app: other}
  template:
    metadata: {labels: {app: rc}}
    spec: {containers: [{name: a, image: nginx}]}
"#,
    );
    let out = env.kubectl(&["apply", "-f", bad.to_str().unwrap()]).await;
    assert_ne!(out.code, 0);
    for message in [
        "webhooks[0].name: Invalid value: \"bad\": should be a domain with at least three segments separated by dots",
        "webhooks[0].clientConfig: Required value: exactly one of url or service is required",
        "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun",
        "webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1",
        "RuntimeClass.node.k8s.io \"bad\" is invalid: handler: Invalid value: \"Not_OK\"",
        "metadata.name: Invalid value: \"v1.wrong\": must be `spec.version+\".\"+spec.group`",
        "spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000",
        "spec.nodeName: Required value",
        "spec.source: Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName",
        "spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"rc\"}: `selector` does not match template `labels`",
    ] {
        assert!(out.stderr.contains(message), "{message}\n{}", out.stderr);
    }
    for (kind, name) in [
        ("mutatingwebhookconfiguration", "bad"),
        ("runtimeclass", "bad"),
        ("volumeattachment", "va"),
    ] {
        let missing = env.kubectl(&["get", kind, name]).await;
        assert_ne!(missing.code, 0, "{kind}/{name} was stored");
    }
}
