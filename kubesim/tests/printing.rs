//! `kubectl get` of built-in kinds prints kube-apiserver's columns from the server's Table:
//! Pods (READY STATUS RESTARTS), Deployments (READY UP-TO-DATE AVAILABLE), Services, Nodes,
//! Namespaces, ConfigMaps, Secrets, Jobs…, `-o wide` adding the priority-1 columns, and
//! watches streaming rows. With the real kubectl 1.32.

mod common;

use common::Env;

fn rows(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .map(|l| {
            l.split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(String::from)
                .collect()
        })
        .collect()
}

const APP: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: nginx, image: "nginx:1.27"}]}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  type: NodePort
  selector: {app: web}
  ports: [{port: 80, nodePort: 30080}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {a: "1", b: "2"}
---
apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {user: me}
---
apiVersion: batch/v1
kind: Job
metadata: {name: once}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: run, image: busybox}]
"#;

#[tokio::test]
async fn built_in_kinds_print_the_api_servers_columns() {
    let env = Env::start().await;
    let file = env.write("app.yaml", APP);
    env.kubectl(&["apply", "-f", file.to_str().unwrap()])
        .await
        .ok();
    env.kubectl(&["rollout", "status", "deployment/web", "--timeout=30s"])
        .await
        .ok();

    let out = env.kubectl(&["get", "deployments"]).await.ok();
    let table = rows(&out.stdout);
    assert_eq!(
        table[0],
        ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"],
        "{}",
        out.stdout
    );
    assert_eq!(table[1][..4], ["web", "2/2", "2", "2"], "{}", out.stdout);
    let out = env
        .kubectl(&["get", "deployments", "-o", "wide"])
        .await
        .ok();
    let table = rows(&out.stdout);
    assert_eq!(
        table[0],
        [
            "NAME",
            "READY",
            "UP-TO-DATE",
            "AVAILABLE",
            "AGE",
            "CONTAINERS",
            "IMAGES",
            "SELECTOR"
        ],
        "{}",
        out.stdout
    );
    assert_eq!(
        table[1][5..],
        ["nginx", "nginx:1.27", "app=web"],
        "{}",
        out.stdout
    );

    let out = env.kubectl(&["get", "pods", "-l", "app=web"]).await.ok();
    let table = rows(&out.stdout);
    assert_eq!(
        table[0],
        ["NAME", "READY", "STATUS", "RESTARTS", "AGE"],
        "{}",
        out.stdout
    );
    assert_eq!(table.len(), 3, "{}", out.stdout);
    for row in &table[1..] {
        assert_eq!(row[1..4], ["1/1", "Running", "0"], "{}", out.stdout);
    }
    let out = env
        .kubectl(&["get", "pods", "-l", "app=web", "-o", "wide"])
        .await
        .ok();
    assert_eq!(
        rows(&out.stdout)[0],
        [
            "NAME",
            "READY",
            "STATUS",
            "RESTARTS",
            "AGE",
            "IP",
            "NODE",
            "NOMINATED NODE",
            "READINESS GATES"
        ]
    );

    let out = env.kubectl(&["get", "services", "web"]).await.ok();
    let table = rows(&out.stdout);
    assert_eq!(
        table[0],
        [
            "NAME",
            "TYPE",
            "CLUSTER-IP",
            "EXTERNAL-IP",
            "PORT(S)",
            "AGE"
        ]
    );
    assert_eq!(table[1][1], "NodePort");
    assert_eq!(table[1][3], "<none>");
    assert_eq!(table[1][4], "80:30080/TCP");

    // the endpoints controller lists the Service's ready Pods
    let mut endpoints = String::new();
    for _ in 0..100 {
        let out = env.kubectl(&["get", "endpoints", "web"]).await;
        if out.code == 0
            && rows(&out.stdout)
                .get(1)
                .is_some_and(|r| r[1].matches(":80").count() == 2)
        {
            endpoints = out.stdout;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(
        rows(&endpoints)[0],
        ["NAME", "ENDPOINTS", "AGE"],
        "{endpoints}"
    );
    let pods = env
        .kubectl(&[
            "get",
            "pods",
            "-l",
            "app=web",
            "-o",
            "jsonpath={.items[*].status.podIP}",
        ])
        .await
        .ok();
    for ip in pods.stdout.split_whitespace() {
        assert!(endpoints.contains(&format!("{ip}:80")), "{endpoints}");
    }
    let out = env.kubectl(&["get", "configmap", "settings"]).await.ok();
    assert_eq!(rows(&out.stdout)[0], ["NAME", "DATA", "AGE"]);
    assert_eq!(rows(&out.stdout)[1][..2], ["settings", "2"]);
    let out = env.kubectl(&["get", "secret", "creds"]).await.ok();
    assert_eq!(rows(&out.stdout)[0], ["NAME", "TYPE", "DATA", "AGE"]);
    assert_eq!(rows(&out.stdout)[1][..3], ["creds", "Opaque", "1"]);
    let out = env.kubectl(&["get", "nodes"]).await.ok();
    assert_eq!(
        rows(&out.stdout)[0],
        ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    );
    assert_eq!(rows(&out.stdout)[1][1], "Ready", "{}", out.stdout);
    let out = env.kubectl(&["get", "namespace", "team-a"]).await.ok();
    assert_eq!(rows(&out.stdout)[0], ["NAME", "STATUS", "AGE"]);
    assert_eq!(rows(&out.stdout)[1][..2], ["team-a", "Active"]);
    let out = env.kubectl(&["get", "jobs"]).await.ok();
    assert_eq!(
        rows(&out.stdout)[0],
        ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"],
        "{}",
        out.stdout
    );
    // kinds without a printer here still list
    let out = env.kubectl(&["get", "roles", "-A"]).await;
    assert_eq!(out.code, 0, "{out:?}");
}

/// A Pod being deleted prints Terminating, as kubectl shows it on a real cluster.
#[tokio::test]
async fn a_terminating_pod_prints_terminating() {
    let env = Env::with(kubesim::ClusterConfig {
        name: "t".into(),
        ready_delay: std::time::Duration::from_millis(100),
        pod_termination: std::time::Duration::from_secs(30),
        ..kubesim::ClusterConfig::default()
    })
    .await;
    let pod = env.write(
        "pod.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: nginx}]}\n",
    );
    env.kubectl(&["apply", "-f", pod.to_str().unwrap()])
        .await
        .ok();
    env.kubectl(&["wait", "--for=condition=Ready", "pod/p", "--timeout=20s"])
        .await
        .ok();
    env.kubectl(&["delete", "pod", "p", "--wait=false"])
        .await
        .ok();
    let out = env.kubectl(&["get", "pod", "p"]).await.ok();
    assert_eq!(rows(&out.stdout)[1][2], "Terminating", "{}", out.stdout);
}
