//! What kubectl shows of the simulated controllers (issue #14 item 10): their Events in
//! `kubectl get events` and `kubectl describe`, `kubectl rollout undo` making a new revision
//! as the Deployment controller does, and `kubectl logs` — the real kubectl 1.32 and raw
//! HTTPS.

mod common;

use std::time::Duration;

use common::Env;
use serde_json::Value;

const DEPLOYMENT: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: team-a}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: app, image: "nginx:1.25", ports: [{name: http, containerPort: 8080}]}]}
"#;

/// Polls `kubectl args` until its stdout satisfies `done` (at most ~20 s).
async fn until(env: &Env, args: &[&str], done: impl Fn(&str) -> bool) -> String {
    let mut last = String::new();
    for _ in 0..200 {
        last = env.kubectl(args).await.ok().stdout;
        if done(&last) {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("kubectl {args:?} never got there; last output:\n{last}");
}

/// The ReplicaSets of team-a: name → (revision, revision-history, replicas).
async fn replica_sets(env: &Env) -> Vec<(String, String, String, i64)> {
    let out = env
        .kubectl(&["get", "rs", "-n", "team-a", "-o", "json"])
        .await
        .ok();
    let list: Value = serde_json::from_str(&out.stdout).unwrap();
    let annotation = |rs: &Value, key: &str| {
        rs["metadata"]["annotations"][key]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|rs| {
            (
                rs["metadata"]["name"].as_str().unwrap().to_string(),
                annotation(rs, "deployment.kubernetes.io/revision"),
                annotation(rs, "deployment.kubernetes.io/revision-history"),
                rs["spec"]["replicas"].as_i64().unwrap(),
            )
        })
        .collect()
}

#[tokio::test]
async fn controllers_record_events_and_rollout_undo_makes_a_new_revision() {
    let env = Env::start().await;
    let file = env.write("web.yaml", DEPLOYMENT);
    env.kubectl(&["apply", "-f", file.to_str().unwrap()])
        .await
        .ok();
    let events = until(&env, &["get", "events", "-n", "team-a"], |o| {
        o.matches("SuccessfulCreate").count() == 2
    })
    .await;
    assert!(
        events.starts_with("LAST SEEN   TYPE     REASON"),
        "{events}"
    );
    let rs = &replica_sets(&env).await[0].0;
    let scaled = format!("Scaled up replica set {rs} from 0 to 2");
    assert!(
        events.lines().any(|l| l.contains("ScalingReplicaSet")
            && l.contains("deployment/web")
            && l.ends_with(&scaled)),
        "{events}"
    );
    assert!(events.contains(&format!("replicaset/{rs}")), "{events}");
    assert!(events.contains("Created pod: web-"), "{events}");
    let described = env
        .kubectl(&["describe", "deployment", "web", "-n", "team-a"])
        .await
        .ok()
        .stdout;
    assert!(
        described.contains("ScalingReplicaSet  ") && described.contains("deployment-controller"),
        "{described}"
    );

    // A new template: revision 2, the first ReplicaSet scaled down.
    env.kubectl(&[
        "set",
        "image",
        "deployment/web",
        "app=nginx:1.27",
        "-n",
        "team-a",
    ])
    .await
    .ok();
    until(&env, &["get", "events", "-n", "team-a"], |o| {
        o.contains(&format!("Scaled down replica set {rs} from 2 to 0"))
    })
    .await;
    // Undo: the first ReplicaSet becomes current again with revision 3, history "1".
    let undo = env
        .kubectl(&["rollout", "undo", "deployment/web", "-n", "team-a"])
        .await
        .ok();
    assert_eq!(undo.stdout.trim(), "deployment.apps/web rolled back");
    let history = until(
        &env,
        &["rollout", "history", "deployment/web", "-n", "team-a"],
        |o| o.contains("\n3 "),
    )
    .await;
    assert!(!history.contains("\n1 "), "revision 1 became 3: {history}");
    let sets = replica_sets(&env).await;
    let first = sets.iter().find(|s| s.0 == *rs).unwrap();
    assert_eq!((first.1.as_str(), first.2.as_str()), ("3", "1"), "{sets:?}");
    let image = env
        .kubectl(&[
            "get", "deployment", "web", "-n", "team-a", "-o",
            "jsonpath={.spec.template.spec.containers[0].image} {.metadata.annotations.deployment\\.kubernetes\\.io/revision}",
        ])
        .await
        .ok()
        .stdout;
    assert_eq!(image, "nginx:1.25 3");
    // Undo again: back to 1.27 as revision 4, whose history keeps its old number.
    env.kubectl(&["rollout", "undo", "deployment/web", "-n", "team-a"])
        .await
        .ok();
    until(
        &env,
        &["rollout", "history", "deployment/web", "-n", "team-a"],
        |o| o.contains("\n4 "),
    )
    .await;
    let sets = replica_sets(&env).await;
    let second = sets.iter().find(|s| s.0 != *rs).unwrap();
    assert_eq!(
        (second.1.as_str(), second.2.as_str()),
        ("4", "2"),
        "{sets:?}"
    );
    // Undo to a revision that does not exist is refused by kubectl, nothing changes.
    let bad = env
        .kubectl(&[
            "rollout",
            "undo",
            "deployment/web",
            "-n",
            "team-a",
            "--to-revision=9",
        ])
        .await;
    assert_ne!(bad.code, 0);
    assert!(
        bad.stderr.contains("unable to find specified revision 9"),
        "{bad:?}"
    );
}

#[tokio::test]
async fn kubectl_logs_returns_the_simulated_lines() {
    let env = Env::start().await;
    let file = env.write("web.yaml", DEPLOYMENT);
    env.kubectl(&["apply", "-f", file.to_str().unwrap()])
        .await
        .ok();
    env.kubectl(&[
        "rollout",
        "status",
        "deployment/web",
        "-n",
        "team-a",
        "--timeout=30s",
    ])
    .await
    .ok();
    let logs = env
        .kubectl(&["logs", "deployment/web", "-n", "team-a"])
        .await
        .ok()
        .stdout;
    assert_eq!(
        logs,
        "kubesim: starting nginx:1.25\nkubesim: listening on 8080/TCP\nkubesim: ready\n"
    );
    let tail = env
        .kubectl(&[
            "logs",
            "deployment/web",
            "-n",
            "team-a",
            "--tail=1",
            "--timestamps",
        ])
        .await
        .ok()
        .stdout;
    let (stamp, line) = tail.trim_end().split_once(' ').unwrap();
    assert_eq!(line, "kubesim: ready");
    assert!(
        stamp.ends_with(".000000000Z") && stamp.starts_with("20"),
        "{tail}"
    );
    // The kubelet's answers when there is nothing to read.
    let pod = env
        .kubectl(&[
            "get",
            "pods",
            "-n",
            "team-a",
            "-o",
            "jsonpath={.items[0].metadata.name}",
        ])
        .await
        .ok()
        .stdout;
    let wrong = env
        .kubectl(&["logs", &pod, "-n", "team-a", "-c", "nope"])
        .await;
    assert!(
        wrong
            .stderr
            .contains(&format!("container nope is not valid for pod {pod}")),
        "{wrong:?}"
    );
    let previous = env
        .kubectl(&["logs", &pod, "-n", "team-a", "--previous"])
        .await;
    assert!(
        previous.stderr.contains(&format!(
            "previous terminated container \"app\" in pod \"{pod}\" not found"
        )),
        "{previous:?}"
    );
    let missing = env.kubectl(&["logs", "ghost", "-n", "team-a"]).await;
    assert!(
        missing.stderr.contains("pods \"ghost\" not found"),
        "{missing:?}"
    );
    let path = format!("/api/v1/namespaces/team-a/pods/{pod}/log");
    let (code, _) = env.raw("DELETE", &path, "", vec![]).await;
    assert_eq!(code, 405, "the log is read-only");
    // Two containers and none named: the API server asks which.
    let two = env.write(
        "two.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: two, namespace: team-a}\nspec:\n  containers: [{name: a, image: busybox}, {name: b, image: busybox}]\n",
    );
    env.kubectl(&["apply", "-f", two.to_str().unwrap()])
        .await
        .ok();
    let (code, body) = env
        .raw("GET", "/api/v1/namespaces/team-a/pods/two/log", "", vec![])
        .await;
    assert_eq!(code, 400);
    let message = body["message"].as_str().unwrap();
    assert!(
        message == "a container name must be specified for pod two, choose one of: [a b]"
            || message.contains("is waiting to start"),
        "{body}"
    );
}

#[tokio::test]
async fn a_thousand_log_reads_answer_the_same_lines() {
    let env = Env::start().await;
    let pod = env.write(
        "pod.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: team-a}\nspec:\n  containers: [{name: a, image: busybox, ports: [{containerPort: 80}, {containerPort: 53, protocol: UDP}]}]\n",
    );
    env.kubectl(&["apply", "-f", pod.to_str().unwrap()])
        .await
        .ok();
    env.kubectl(&[
        "wait",
        "pod/p",
        "-n",
        "team-a",
        "--for=condition=Ready",
        "--timeout=30s",
    ])
    .await
    .ok();
    let (_, full) = env.text("/api/v1/namespaces/team-a/pods/p/log").await;
    assert_eq!(full.lines().count(), 4, "{full}");
    for i in 0..1000 {
        let tail = i % 6;
        let (code, text) = env
            .text(&format!(
                "/api/v1/namespaces/team-a/pods/p/log?tailLines={tail}&limitBytes={}",
                1 + i % 90
            ))
            .await;
        assert_eq!(code, 200, "read {i}");
        let lines: Vec<&str> = full.lines().collect();
        let want: String = lines[lines.len().saturating_sub(tail)..]
            .iter()
            .map(|l| format!("{l}\n"))
            .collect();
        let limit = (1 + i % 90).min(want.len());
        assert_eq!(text, want[..limit], "read {i}");
    }
}

#[tokio::test]
async fn a_hundred_scalings_leave_an_unbroken_chain_of_scaling_events() {
    let env = Env::start().await;
    let file = env.write("web.yaml", DEPLOYMENT);
    env.kubectl(&["apply", "-f", file.to_str().unwrap()])
        .await
        .ok();
    let scale = "/apis/apps/v1/namespaces/team-a/deployments/web/scale";
    for i in 0..100 {
        let body = serde_json::json!({"apiVersion": "autoscaling/v1", "kind": "Scale",
            "metadata": {"name": "web", "namespace": "team-a"},
            "spec": {"replicas": 1 + i % 5}});
        let (code, out) = env.json("PUT", scale, &body).await;
        assert_eq!(code, 200, "scaling {i}: {out}");
        if i % 10 == 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    // The last scale asks for 5: wait until the events reach it.
    let mut messages: Vec<String> = Vec::new();
    for _ in 0..200 {
        let (_, list) = env
            .raw(
                "GET",
                "/api/v1/namespaces/team-a/events?fieldSelector=reason%3DScalingReplicaSet",
                "",
                vec![],
            )
            .await;
        messages = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["message"].as_str().unwrap().to_string())
            .collect();
        if messages.last().is_some_and(|m| m.ends_with(" to 5")) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(messages.len() >= 2, "{messages:?}");
    // Each event starts where the one before it ended, and says up or down rightly.
    let mut at = 0;
    for m in &messages {
        let words: Vec<&str> = m.split(' ').collect();
        let (from, to): (i64, i64) = (words[6].parse().unwrap(), words[8].parse().unwrap());
        assert_eq!(from, at, "{m} after {at}: {messages:?}");
        assert_eq!(words[1], if to > from { "up" } else { "down" }, "{m}");
        at = to;
    }
    assert_eq!(at, 5);
}

#[tokio::test]
async fn jobs_record_successful_create_for_their_pods() {
    let env = Env::start().await;
    let job = env.write(
        "job.yaml",
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: once, namespace: team-a}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: a, image: busybox}]\n",
    );
    env.kubectl(&["apply", "-f", job.to_str().unwrap()])
        .await
        .ok();
    let events = until(&env, &["get", "events", "-n", "team-a"], |o| {
        o.contains("job/once")
    })
    .await;
    let line = events.lines().find(|l| l.contains("job/once")).unwrap();
    assert!(
        line.contains("SuccessfulCreate") && line.contains("Created pod: once-"),
        "{events}"
    );
}
