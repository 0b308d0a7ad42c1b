//! `kubectl create` of workloads, Services, Ingresses, PDBs, RBAC objects, PriorityClasses,
//! ResourceQuotas and ServiceAccounts, `kubectl run` and `kubectl autoscale`: the real kubectl
//! 1.32 sends them as protobuf (issue #14 item 6), and kubesim stores what the JSON form
//! would have said.

mod common;

use common::Env;
use serde_json::{Value, json};

async fn get_json(env: &Env, args: &[&str]) -> Value {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", "json"]);
    serde_json::from_str(&env.kubectl(&all).await.ok().stdout).unwrap()
}

#[tokio::test]
async fn kubectl_create_sends_protobuf_and_kubesim_stores_the_objects() {
    let env = Env::start().await;
    for args in [
        &[
            "create",
            "role",
            "r1",
            "-n",
            "team-a",
            "--verb=get,list",
            "--resource=pods,deployments.apps",
            "--resource-name=x",
        ][..],
        &[
            "create",
            "clusterrole",
            "cr1",
            "--verb=get",
            "--non-resource-url=/logs",
        ],
        &[
            "create",
            "clusterrole",
            "agg",
            "--aggregation-rule=rbac.example.com/aggregate-to-view=true",
        ],
        &[
            "create",
            "rolebinding",
            "rb1",
            "-n",
            "team-a",
            "--role=r1",
            "--user=alice",
            "--group=devs",
            "--serviceaccount=team-a:default",
        ],
        &[
            "create",
            "clusterrolebinding",
            "crb1",
            "--clusterrole=view",
            "--user=bob",
        ],
        &[
            "create",
            "priorityclass",
            "high",
            "--value=1000",
            "--description=important",
            "--preemption-policy=Never",
        ],
        &["create", "priorityclass", "low", "--value=-5"],
        &[
            "create",
            "quota",
            "q1",
            "-n",
            "team-a",
            "--hard=cpu=1000m,memory=1024Mi,pods=2",
            "--scopes=BestEffort",
        ],
        &["create", "serviceaccount", "bot", "-n", "team-a"],
    ] {
        let out = env.kubectl(args).await;
        assert_eq!(out.code, 0, "kubectl {args:?}: {out:?}");
        assert!(out.stdout.ends_with(" created\n"), "{out:?}");
    }
    let role = get_json(&env, &["role", "r1", "-n", "team-a"]).await;
    assert_eq!(
        role["rules"],
        json!([{"apiGroups": [""], "resources": ["pods"], "resourceNames": ["x"], "verbs": ["get", "list"]},
            {"apiGroups": ["apps"], "resources": ["deployments"], "resourceNames": ["x"], "verbs": ["get", "list"]}])
    );
    let cr = get_json(&env, &["clusterrole", "cr1"]).await;
    assert_eq!(
        cr["rules"],
        json!([{"nonResourceURLs": ["/logs"], "verbs": ["get"]}])
    );
    let agg = get_json(&env, &["clusterrole", "agg"]).await;
    assert_eq!(
        agg["aggregationRule"]["clusterRoleSelectors"][0]["matchLabels"],
        json!({"rbac.example.com/aggregate-to-view": "true"})
    );
    let rb = get_json(&env, &["rolebinding", "rb1", "-n", "team-a"]).await;
    assert_eq!(
        rb["roleRef"],
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r1"})
    );
    assert_eq!(rb["subjects"].as_array().unwrap().len(), 3);
    assert_eq!(
        rb["subjects"][2],
        json!({"kind": "ServiceAccount", "name": "default", "namespace": "team-a"})
    );
    let high = get_json(&env, &["priorityclass", "high"]).await;
    assert_eq!(
        (
            &high["value"],
            &high["description"],
            &high["preemptionPolicy"]
        ),
        (&json!(1000), &json!("important"), &json!("Never"))
    );
    assert!(
        high.get("globalDefault").is_none(),
        "false is omitted: {high}"
    );
    let low = get_json(&env, &["priorityclass", "low"]).await;
    assert_eq!(low["value"], -5, "negative int32 values survive");
    let quota = get_json(&env, &["quota", "q1", "-n", "team-a"]).await;
    assert_eq!(
        quota["spec"],
        json!({"hard": {"cpu": "1", "memory": "1Gi", "pods": "2"}, "scopes": ["BestEffort"]}),
        "quantities in canonical form, as after JSON"
    );
    // The bindings take effect: bob may now read ConfigMaps through `view`.
    let can = env
        .kubectl(&[
            "auth",
            "can-i",
            "list",
            "configmaps",
            "-n",
            "team-a",
            "--as=bob",
        ])
        .await;
    assert_eq!(can.stdout.trim(), "yes", "{can:?}");
    // Validation runs on protobuf bodies as on JSON ones.
    let bad = env
        .kubectl(&["create", "priorityclass", "Bad_Name", "--value=1"])
        .await;
    assert_ne!(bad.code, 0);
    assert!(
        bad.stderr
            .contains("PriorityClass.scheduling.k8s.io \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\""),
        "{bad:?}"
    );
    let dry = env
        .kubectl(&[
            "create",
            "role",
            "dry",
            "-n",
            "team-a",
            "--verb=get",
            "--resource=pods",
            "--dry-run=server",
            "-o",
            "name",
        ])
        .await
        .ok();
    assert_eq!(dry.stdout.trim(), "role.rbac.authorization.k8s.io/dry");
    assert_ne!(
        env.kubectl(&["get", "role", "dry", "-n", "team-a"])
            .await
            .code,
        0
    );
}

/// The bytes kubectl 1.32 sends for `create priorityclass NNN --value=5 --description=hi
/// --preemption-policy=Never`, for a three-character name.
fn priority_class(name: &str) -> Vec<u8> {
    assert_eq!(name.len(), 3);
    let mut body =
        b"k8s\x00\x0a\x25\x0a\x14scheduling.k8s.io/v1\x12\x0dPriorityClass\x12\x24\x0a\x13\x0a\x03"
            .to_vec();
    body.extend_from_slice(name.as_bytes());
    body.extend_from_slice(b"\x12\x00\x1a\x00\x22\x00\x2a\x002\x008\x00B\x00\x10\x05\x18\x00\x22\x02hi\x2a\x05Never\x1a\x00\x22\x00");
    body
}

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
const PRIORITY_CLASSES: &str = "/apis/scheduling.k8s.io/v1/priorityclasses";

#[tokio::test]
async fn hostile_protobuf_bodies_are_refused_without_storing_anything() {
    let env = Env::start().await;
    let good = priority_class("abc");
    // Every truncation of a valid body is a 400 or an object with less in it, never a 500.
    for cut in 4..good.len() {
        let (code, body) = env
            .raw(
                "POST",
                &format!("{PRIORITY_CLASSES}?dryRun=All"),
                PROTOBUF,
                good[..cut].to_vec(),
            )
            .await;
        assert!(code.as_u16() < 500, "cut at {cut}: {code} {body}");
    }
    let (code, body) = env
        .raw(
            "POST",
            PRIORITY_CLASSES,
            PROTOBUF,
            b"k8s\x00\x0a\xff\xff\xff".to_vec(),
        )
        .await;
    assert_eq!(code, 400, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("protobuf"),
        "{body}"
    );
    let (code, body) = env
        .raw(
            "POST",
            PRIORITY_CLASSES,
            PROTOBUF,
            b"{\"kind\":\"PriorityClass\"}".to_vec(),
        )
        .await;
    assert_eq!(code, 400, "JSON under the protobuf type: {body}");
    // A kind with no protobuf form (a custom resource's) is named in the 415.
    let widget = b"k8s\x00\x0a\x18\x0a\x0eexample.com/v1\x12\x06Widget\x12\x00".to_vec();
    let (code, body) = env
        .raw(
            "POST",
            "/apis/apps/v1/namespaces/team-a/statefulsets",
            PROTOBUF,
            widget,
        )
        .await;
    assert_eq!(code, 415, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("example.com/v1, Kind=Widget"),
        "{body}"
    );
    let (_, list) = env.raw("GET", PRIORITY_CLASSES, "", vec![]).await;
    assert!(
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["metadata"]["name"] != "abc"),
        "{list}"
    );
}

#[tokio::test]
async fn a_thousand_protobuf_creates_store_a_thousand_objects() {
    let env = Env::start().await;
    let digits: Vec<char> = "0123456789abcdefghijklmnopqrstuvwxyz".chars().collect();
    for i in 0..1000 {
        let name = format!("p{}{}", digits[i / 36], digits[i % 36]);
        let (code, body) = env
            .raw("POST", PRIORITY_CLASSES, PROTOBUF, priority_class(&name))
            .await;
        assert_eq!(code, 201, "create {i}: {body}");
        assert_eq!(body["value"], 5);
    }
    let (_, list) = env.raw("GET", PRIORITY_CLASSES, "", vec![]).await;
    let ours = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["description"] == "hi" && p["preemptionPolicy"] == "Never")
        .count();
    assert_eq!(ours, 1000);
}

#[tokio::test]
async fn kubectl_create_of_workloads_and_networking_kinds_works() {
    let env = Env::start().await;
    for args in [
        &[
            "create",
            "deployment",
            "web",
            "-n",
            "team-a",
            "--image=nginx:1.27",
            "--replicas=2",
            "--port=8080",
        ][..],
        &[
            "create",
            "job",
            "once",
            "-n",
            "team-a",
            "--image=busybox",
            "--",
            "echo",
            "hi",
        ],
        &[
            "create",
            "cronjob",
            "tick",
            "-n",
            "team-a",
            "--image=busybox",
            "--schedule=*/5 * * * *",
            "--restart=Never",
        ],
        &[
            "create",
            "service",
            "clusterip",
            "web",
            "-n",
            "team-a",
            "--tcp=80:8080",
        ],
        &[
            "create",
            "service",
            "nodeport",
            "np",
            "-n",
            "team-a",
            "--tcp=81:http",
        ],
        &[
            "create",
            "ingress",
            "web",
            "-n",
            "team-a",
            "--class=nginx",
            "--rule=foo.com/bar*=web:80,tls=cert",
        ],
        &[
            "create",
            "pdb",
            "web",
            "-n",
            "team-a",
            "--selector=app=web",
            "--min-available=50%",
        ],
        &[
            "autoscale",
            "deployment",
            "web",
            "-n",
            "team-a",
            "--min=2",
            "--max=5",
            "--cpu-percent=60",
        ],
        &[
            "run",
            "solo",
            "-n",
            "team-a",
            "--image=busybox",
            "--restart=Never",
            "--env=A=1",
            "--labels=x=y",
            "--",
            "sleep",
            "1",
        ],
    ] {
        let out = env.kubectl(args).await;
        assert_eq!(out.code, 0, "kubectl {args:?}: {out:?}");
    }
    let deploy = get_json(&env, &["deployment", "web", "-n", "team-a"]).await;
    assert_eq!(deploy["spec"]["replicas"], 2);
    assert_eq!(
        deploy["spec"]["selector"],
        json!({"matchLabels": {"app": "web"}})
    );
    let container = &deploy["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        (&container["name"], &container["image"]),
        (&json!("nginx"), &json!("nginx:1.27"))
    );
    assert_eq!(
        container["ports"],
        json!([{"containerPort": 8080, "protocol": "TCP"}]),
        "unset fields omitted, defaults applied as after JSON"
    );
    assert_eq!(container["terminationMessagePath"], "/dev/termination-log");
    assert!(container.get("stdin").is_none(), "{container}");
    let job = get_json(&env, &["job", "once", "-n", "team-a"]).await;
    assert_eq!(
        job["spec"]["template"]["spec"]["containers"][0]["command"],
        json!(["echo", "hi"])
    );
    assert_eq!(job["spec"]["template"]["spec"]["restartPolicy"], "Never");
    let cron = get_json(&env, &["cronjob", "tick", "-n", "team-a"]).await;
    assert_eq!(cron["spec"]["schedule"], "*/5 * * * *");
    let svc = get_json(&env, &["service", "web", "-n", "team-a"]).await;
    assert_eq!(
        svc["spec"]["ports"][0],
        json!({"name": "80-8080", "port": 80, "protocol": "TCP", "targetPort": 8080})
    );
    let np = get_json(&env, &["service", "np", "-n", "team-a"]).await;
    assert_eq!(np["spec"]["type"], "NodePort");
    assert_eq!(np["spec"]["ports"][0]["targetPort"], "http");
    assert!(np["spec"]["ports"][0]["nodePort"].as_i64().unwrap() >= 30000);
    let ing = get_json(&env, &["ingress", "web", "-n", "team-a"]).await;
    assert_eq!(ing["spec"]["ingressClassName"], "nginx");
    assert_eq!(
        ing["spec"]["tls"],
        json!([{"hosts": ["foo.com"], "secretName": "cert"}])
    );
    assert_eq!(
        ing["spec"]["rules"][0],
        json!({"host": "foo.com", "http": {"paths": [{"path": "/bar", "pathType": "Prefix",
            "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}})
    );
    let pdb = get_json(&env, &["pdb", "web", "-n", "team-a"]).await;
    assert_eq!(pdb["spec"]["minAvailable"], "50%");
    let hpa = get_json(&env, &["hpa", "web", "-n", "team-a"]).await;
    assert_eq!(hpa["apiVersion"], "autoscaling/v2");
    assert_eq!(
        hpa["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
        60
    );
    assert_eq!(hpa["spec"]["minReplicas"], 2);
    let pod = get_json(&env, &["pod", "solo", "-n", "team-a"]).await;
    assert_eq!(pod["metadata"]["labels"], json!({"x": "y"}));
    assert_eq!(
        pod["spec"]["containers"][0]["env"],
        json!([{"name": "A", "value": "1"}])
    );
    assert_eq!(pod["spec"]["containers"][0]["args"], json!(["sleep", "1"]));
    // Validation runs on these bodies as on JSON ones.
    let bad = env
        .kubectl(&[
            "create",
            "deployment",
            "Bad_Name",
            "-n",
            "team-a",
            "--image=nginx",
        ])
        .await;
    assert!(
        bad.stderr
            .contains("metadata.name: Invalid value: \"Bad_Name\""),
        "{bad:?}"
    );
}

#[tokio::test]
async fn a_pod_field_of_the_wrong_wire_type_is_refused_naming_it() {
    let env = Env::start().await;
    // A Pod whose container's liveness probe (Container field 10) carries its handler
    // (Probe field 1, an inlined message) as a varint: 400 naming the field, nothing stored.
    let mut container = b"\x0a\x01c\x12\x07busybox".to_vec();
    container.extend_from_slice(b"\x52\x02\x08\x01");
    let mut spec = vec![0x12, container.len() as u8];
    spec.extend_from_slice(&container);
    let mut raw = b"\x0a\x05\x0a\x03bad".to_vec();
    raw.push(0x12);
    raw.push(spec.len() as u8);
    raw.extend_from_slice(&spec);
    let mut body = b"k8s\x00\x0a\x09\x0a\x02v1\x12\x03Pod".to_vec();
    body.push(0x12);
    body.push(raw.len() as u8);
    body.extend_from_slice(&raw);
    let (code, out) = env
        .raw("POST", "/api/v1/namespaces/team-a/pods", PROTOBUF, body)
        .await;
    assert_eq!(code, 400, "{out}");
    assert!(
        out["message"]
            .as_str()
            .unwrap()
            .ends_with("Pod proto: wrong wireType = 0 for field spec.containers[0].livenessProbe"),
        "{out}"
    );
    let (code, _) = env
        .raw("GET", "/api/v1/namespaces/team-a/pods/bad", "", vec![])
        .await;
    assert_eq!(code, 404);
}
