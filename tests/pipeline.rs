//! The reconcile pipeline against kubesim: create, update, no-op, prune; CRD + CR in one App;
//! the allowlist refusing before any request; Held → approve; a Held plan invalidated by a
//! change; the prune guard; sync windows; selfHeal after a kubectl edit; health waits.

mod common;

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use wardn::app::{
    AppSpec, AppStatus, Destination, HealthState, Phase, SyncPolicy, SyncWindow, WindowKind,
};
use wardn::clusters::allowlist::Allowlist;
use wardn::clusters::throttle::Throttles;
use wardn::diff::digest;
use wardn::diff::known::{Known, LiveState, LiveStates, Verified};
use wardn::object::ObjectRef;
use wardn::reconcile::decide::Trigger;
use wardn::reconcile::error::{ErrorClass, ReconcileError};
use wardn::reconcile::pass::{Manifests, Options, Outcome, Pass, Target};
use wardn::reconcile::pipeline;
use wardn::render::PackedObjects;
use wardn::sources::spec::{DirectorySpec, SourceSpec, SourceType};

const NS: &str = "staging";

fn spec(policy: SyncPolicy) -> AppSpec {
    AppSpec {
        source: SourceSpec {
            kind: SourceType::Directory,
            git: None,
            directory: Some(DirectorySpec {
                path: "/srv/app".into(),
            }),
        },
        destination: Destination {
            cluster: "staging".into(),
            namespace: NS.into(),
            ..Default::default()
        },
        sync_policy: policy,
        promotion: None,
        notify: Vec::new(),
        targets: Default::default(),
    }
}

fn auto() -> SyncPolicy {
    SyncPolicy {
        automated: true,
        prune: true,
        ..Default::default()
    }
}

fn manifests(revision: &str, objects: Vec<Value>) -> Manifests {
    let digest = hex::encode(Sha256::digest(serde_json::to_vec(&objects).unwrap()));
    Manifests {
        revision: revision.into(),
        digest,
        objects: PackedObjects::pack(&objects),
    }
}

fn cm(name: &str, value: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": value}})
}

fn options() -> Options {
    Options {
        health_timeout: Duration::from_secs(60),
        crd_timeout: Duration::from_secs(30),
        poll: Duration::from_millis(100),
        approval_ttl: Some(Duration::from_secs(3600)),
    }
}

fn at(s: &str) -> Timestamp {
    s.parse().unwrap()
}

async fn target(sim: &common::Sim, allowlist: Allowlist) -> Target {
    Target {
        cluster: "staging".into(),
        client: sim.cluster.client().await.unwrap(),
        allowlist,
        kinds: Default::default(),
    }
}

fn p<'a>(
    spec: &'a AppSpec,
    previous: &'a AppStatus,
    target: &'a Target,
    manifests: &'a Manifests,
) -> Pass<'a> {
    Pass {
        app: "org-my-org/my-app",
        spec,
        previous,
        target,
        manifests,
        known: None,
        journal: None,
    }
}

async fn pass(
    spec: &AppSpec,
    prev: &AppStatus,
    t: &Target,
    m: &Manifests,
    trigger: Trigger,
) -> Result<Outcome, ReconcileError> {
    pipeline::reconcile(
        p(spec, prev, t, m),
        &trigger,
        &options(),
        Timestamp::now(),
        &mut |_| {},
    )
    .await
}

fn live(sim: &common::Sim, kind: &str, name: &str) -> Option<Value> {
    sim.cluster.get_object("v1", kind, Some(NS), name)
}

#[tokio::test(flavor = "multi_thread")]
async fn create_update_noop_prune() {
    let sim = common::start(&[NS]).await;
    let t = target(&sim, Allowlist::namespaces([NS])).await;
    let app = spec(auto());
    let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}}});
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds"}, "stringData": {"password": "hunter2"}});

    // Create.
    let m1 = manifests(
        "r1",
        vec![
            cm("a", "1"),
            cm("b", "1"),
            cm("c", "1"),
            deploy.clone(),
            secret.clone(),
        ],
    );
    let o1 = pass(&app, &AppStatus::default(), &t, &m1, Trigger::Automatic)
        .await
        .unwrap();
    assert_eq!(
        o1.status.phase,
        Some(Phase::Synced),
        "{:?}",
        o1.status.message
    );
    assert_eq!(o1.status.plan.unwrap().creates, 5);
    assert_eq!(o1.status.health, Some(HealthState::Healthy));
    assert_eq!(o1.status.inventory.len(), 5);
    assert_eq!(o1.status.synced_revision.as_deref(), Some("r1"));
    assert!(!o1.plan.text().contains("hunter2"));
    let d = sim
        .cluster
        .get_object("apps/v1", "Deployment", Some(NS), "web")
        .unwrap();
    assert_eq!(
        d["status"]["availableReplicas"], 2,
        "health waited for the rollout"
    );
    assert_eq!(live(&sim, "ConfigMap", "a").unwrap()["data"]["k"], "1");
    let managers: Vec<_> = live(&sim, "ConfigMap", "a").unwrap()["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["manager"].clone())
        .collect();
    assert_eq!(managers, [json!("wardn")]);

    // No-op: nothing applied (resourceVersions unchanged).
    let rv = live(&sim, "ConfigMap", "a").unwrap()["metadata"]["resourceVersion"].clone();
    let o2 = pass(&app, &o1.status, &t, &m1, Trigger::Automatic)
        .await
        .unwrap();
    assert_eq!(o2.status.phase, Some(Phase::Synced));
    assert!(o2.plan.is_noop(), "{}", o2.plan.text());
    assert_eq!(o2.status.plan.unwrap().unchanged, 5);
    assert_eq!(
        live(&sim, "ConfigMap", "a").unwrap()["metadata"]["resourceVersion"],
        rv
    );
    // A no-op pass after the status was lost (a new store, a restarted operator): the
    // inventory lists the App's objects again, so a later removal from the source is pruned.
    let lost = pass(&app, &AppStatus::default(), &t, &m1, Trigger::Automatic)
        .await
        .unwrap();
    assert!(lost.plan.is_noop(), "{}", lost.plan.text());
    assert_eq!(lost.status.inventory, o1.status.inventory);
    let without_c = manifests(
        "r1b",
        vec![cm("a", "1"), cm("b", "1"), deploy.clone(), secret.clone()],
    );
    let pruned = pass(&app, &lost.status, &t, &without_c, Trigger::Automatic)
        .await
        .unwrap();
    assert_eq!(
        pruned.status.plan.unwrap().prunes,
        1,
        "{}",
        pruned.plan.text()
    );
    assert!(live(&sim, "ConfigMap", "c").is_none());
    // Back as it was for the steps below.
    let o2 = pass(&app, &pruned.status, &t, &m1, Trigger::Automatic)
        .await
        .unwrap();

    // Update.
    let m3 = manifests(
        "r2",
        vec![
            cm("a", "2"),
            cm("b", "1"),
            cm("c", "1"),
            deploy.clone(),
            secret.clone(),
        ],
    );
    let o3 = pass(&app, &o2.status, &t, &m3, Trigger::Automatic)
        .await
        .unwrap();
    assert_eq!(o3.status.phase, Some(Phase::Synced));
    let s = o3.status.plan.unwrap();
    assert_eq!((s.creates, s.updates, s.unchanged), (0, 1, 4));
    let change = &o3.plan.objects[0].changes[0];
    assert_eq!(
        (change.path.as_str(), change.after.clone()),
        ("/data/k", Some(json!("2")))
    );
    assert!(
        o3.plan.text().contains("+  k: '2'") || o3.plan.text().contains("+  k: \"2\""),
        "{}",
        o3.plan.text()
    );
    assert_eq!(live(&sim, "ConfigMap", "a").unwrap()["data"]["k"], "2");

    // Prune: b is no longer rendered; an object wardn never applied is never deleted, even if
    // the inventory names it.
    let manual = r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "manual", "namespace": "staging"}, "data": {"k": "v"}}"#;
    sim.kubectl(&["create", "-f", "-"], Some(manual));
    let mut prev = o3.status.clone();
    prev.inventory.push(wardn::object::ObjectRef {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        namespace: Some(NS.into()),
        name: "manual".into(),
    });
    // Nor is an object another App applied.
    let foreign = manifests("x1", vec![cm("foreign", "1")]);
    let other = Pass {
        app: "org-my-org/other",
        spec: &app,
        previous: &AppStatus::default(),
        target: &t,
        manifests: &foreign,
        known: None,
        journal: None,
    };
    let o_other = pipeline::reconcile(
        other,
        &Trigger::Automatic,
        &options(),
        Timestamp::now(),
        &mut |_| {},
    )
    .await
    .unwrap();
    assert_eq!(o_other.status.phase, Some(Phase::Synced));
    prev.inventory.push(o_other.status.inventory[0].clone());
    let m4 = manifests("r3", vec![cm("a", "2"), cm("c", "1"), deploy, secret]);
    let o4 = pass(&app, &prev, &t, &m4, Trigger::Automatic)
        .await
        .unwrap();
    assert_eq!(
        o4.status.phase,
        Some(Phase::Synced),
        "{:?}",
        o4.status.message
    );
    assert_eq!(o4.plan.prunes.len(), 1);
    assert_eq!(o4.plan.prunes[0].object.name, "b");
    assert_eq!(o4.pruned.unwrap().deleted.len(), 1);
    assert!(live(&sim, "ConfigMap", "b").is_none());
    assert!(
        live(&sim, "ConfigMap", "manual").is_some(),
        "not applied by wardn: never pruned"
    );
    assert!(
        live(&sim, "ConfigMap", "foreign").is_some(),
        "another App's object: never pruned"
    );
    assert_eq!(o4.status.inventory.len(), 4);
    assert!(
        o4.status
            .inventory
            .iter()
            .all(|r| r.name != "b" && r.name != "manual" && r.name != "foreign")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn crd_and_custom_resource_in_one_app() {
    let sim = common::start(&[NS]).await;
    let t = target(&sim, Allowlist::unrestricted()).await;
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}});
    let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1", "namespace": "widgets"}, "spec": {"size": 3}});
    let namespace =
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "widgets"}});
    // The CR comes first in rendered order; apply order puts the CRD first.
    let m = manifests("r1", vec![widget, crd, namespace]);
    let o = pass(
        &spec(auto()),
        &AppStatus::default(),
        &t,
        &m,
        Trigger::Automatic,
    )
    .await
    .unwrap();
    assert_eq!(
        o.status.phase,
        Some(Phase::Synced),
        "{:?}",
        o.status.message
    );
    assert_eq!(o.status.plan.unwrap().creates, 3);
    let w = sim
        .cluster
        .get_object("example.com/v1", "Widget", Some("widgets"), "w1")
        .unwrap();
    assert_eq!(w["spec"]["size"], 3);
    // Second pass: both known now, nothing to do.
    let o2 = pass(&spec(auto()), &o.status, &t, &m, Trigger::Automatic)
        .await
        .unwrap();
    assert!(o2.plan.is_noop(), "{}", o2.plan.text());
}

#[tokio::test(flavor = "multi_thread")]
async fn allowlist_refuses_before_any_request() {
    let sim = common::start(&[NS]).await;
    let t = target(&sim, Allowlist::namespaces([NS])).await;
    // Every request would fail with a 500: a Forbidden answer proves none was sent.
    sim.cluster.set_faults(kubesim::Faults {
        error_rate: 1.0,
        error_status: 500,
        ..Default::default()
    });
    let mut other = cm("x", "1");
    other["metadata"]["namespace"] = json!("kube-system");
    let m = manifests("r1", vec![cm("a", "1"), other]);
    let err = pass(
        &spec(auto()),
        &AppStatus::default(),
        &t,
        &m,
        Trigger::Automatic,
    )
    .await
    .unwrap_err();
    assert_eq!(err.class(), ErrorClass::Forbidden, "{err}");
    assert!(
        err.to_string()
            .contains("\"kube-system\" is not in the allowlist of cluster staging"),
        "{err}"
    );
    let status = err.status(&AppStatus::default(), Some(&m), Timestamp::now());
    assert_eq!(status.phase, Some(Phase::Failed));
    assert_eq!(status.revision.as_deref(), Some("r1"));
    // A cluster-scoped object is refused too, and a destination outside the list.
    let ns = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "r"}});
    let err = pass(
        &spec(auto()),
        &AppStatus::default(),
        &t,
        &manifests("r2", vec![ns]),
        Trigger::Automatic,
    )
    .await
    .unwrap_err();
    assert_eq!(err.class(), ErrorClass::Forbidden, "{err}");
    sim.cluster.set_faults(kubesim::Faults::default());
    assert!(live(&sim, "ConfigMap", "a").is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn held_plan_is_approved_as_the_exact_change() {
    let sim = common::start(&[NS]).await;
    let t = target(&sim, Allowlist::namespaces([NS])).await;
    let gated = spec(SyncPolicy {
        requires_approval: true,
        ..auto()
    });
    let m = manifests("r1", vec![cm("a", "1")]);
    let held = pass(&gated, &AppStatus::default(), &t, &m, Trigger::Automatic)
        .await
        .unwrap();
    assert_eq!(held.status.phase, Some(Phase::Held));
    let hash = held.status.plan_hash.clone().unwrap();
    assert!(held.status.message.as_deref().unwrap().contains(&hash));
    assert!(
        live(&sim, "ConfigMap", "a").is_none(),
        "Held: nothing applied"
    );

    // A pass with the Approved trigger does not bypass approval: only approve() applies.
    let again = pipeline::reconcile(
        p(&gated, &held.status, &t, &m),
        &Trigger::Approved,
        &options(),
        Timestamp::now(),
        &mut |_| {},
    )
    .await
    .unwrap();
    assert_eq!(again.status.phase, Some(Phase::Held));
    assert_eq!(
        again.status.held_at, held.status.held_at,
        "the same plan stays Held"
    );
    assert!(live(&sim, "ConfigMap", "a").is_none());

    // A wrong hash is refused without touching anything.
    let now = Timestamp::now();
    let err = pipeline::approve(
        p(&gated, &held.status, &t, &m),
        Some("0000"),
        &options(),
        now,
        &mut |_| {},
    )
    .await
    .unwrap_err();
    assert_eq!(err.class(), ErrorClass::Conflict);
    assert!(matches!(err, ReconcileError::WrongPlan { .. }));

    let done = pipeline::approve(
        p(&gated, &held.status, &t, &m),
        Some(&hash),
        &options(),
        now,
        &mut |_| {},
    )
    .await
    .unwrap();
    assert_eq!(done.status.phase, Some(Phase::Synced));
    assert_eq!(done.plan.plan_hash, hash);
    assert_eq!(live(&sim, "ConfigMap", "a").unwrap()["data"]["k"], "1");
    // Nothing Held any more.
    let err = pipeline::approve(
        p(&gated, &done.status, &t, &m),
        None,
        &options(),
        now,
        &mut |_| {},
    )
    .await
    .unwrap_err();
    assert!(matches!(err, ReconcileError::NothingHeld));
}

#[tokio::test(flavor = "multi_thread")]
async fn held_plan_invalidated_by_a_change_is_refused_and_held_again() {
    let sim = common::start(&[NS]).await;
    let t = target(&sim, Allowlist::namespaces([NS])).await;
    let gated = spec(SyncPolicy {
        requires_approval: true,
        ..auto()
    });
    let m1 = manifests("r1", vec![cm("a", "1")]);
    let first = pass(&gated, &AppStatus::default(), &t, &m1, Trigger::Automatic)
        .await
        .unwrap();
    let first = pipeline::approve(
        p(&gated, &first.status, &t, &m1),
        None,
        &options(),
        Timestamp::now(),
        &mut |_| {},
    )
    .await
    .unwrap();
    assert_eq!(first.status.phase, Some(Phase::Synced));

    // r2 changes a; Held.
    let m2 = manifests("r2", vec![cm("a", "2")]);
    let held = pass(&gated, &first.status, &t, &m2, Trigger::Automatic)
        .await
        .unwrap();
    assert_eq!(held.status.phase, Some(Phase::Held));
    let h2 = held.status.plan_hash.clone().unwrap();

    // Someone edits the object the plan touches: its live resourceVersion moves.
    sim.kubectl(&["label", "configmap", "a", "-n", NS, "edited=yes"], None);
    let err = pipeline::approve(
        p(&gated, &held.status, &t, &m2),
        Some(&h2),
        &options(),
        Timestamp::now(),
        &mut |_| {},
    )
    .await
    .unwrap_err();
    assert_eq!(err.class(), ErrorClass::Conflict, "{err}");
    let ReconcileError::PlanChanged { outcome, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(outcome.status.phase, Some(Phase::Held));
    let h3 = outcome.status.plan_hash.clone().unwrap();
    assert_ne!(h3, h2);
    assert_eq!(
        live(&sim, "ConfigMap", "a").unwrap()["data"]["k"],
        "1",
        "nothing applied"
    );

    // A new commit also invalidates it.
    let m3 = manifests("r3", vec![cm("a", "3")]);
    let err = pipeline::approve(
        p(&gated, &outcome.status, &t, &m3),
        Some(&h3),
        &options(),
        Timestamp::now(),
        &mut |_| {},
    )
    .await
    .unwrap_err();
    let ReconcileError::PlanChanged { outcome, .. } = err else {
        panic!("expected PlanChanged")
    };
    assert_eq!(outcome.status.revision.as_deref(), Some("r3"));
    let h4 = outcome.status.plan_hash.clone().unwrap();
    let done = pipeline::approve(
        p(&gated, &outcome.status, &t, &m3),
        Some(&h4),
        &options(),
        Timestamp::now(),
        &mut |_| {},
    )
    .await
    .unwrap();
    assert_eq!(done.status.phase, Some(Phase::Synced));
    assert_eq!(live(&sim, "ConfigMap", "a").unwrap()["data"]["k"], "3");

    // An expired approval is refused and Held afresh.
    let held = pass(
        &gated,
        &done.status,
        &t,
        &manifests("r4", vec![cm("a", "4")]),
        Trigger::Automatic,
    )
    .await
    .unwrap();
    let late = Timestamp::now() + SignedDuration::from_hours(2);
    let err = pipeline::approve(
        p(
            &gated,
            &held.status,
            &t,
            &manifests("r4", vec![cm("a", "4")]),
        ),
        None,
        &options(),
        late,
        &mut |_| {},
    )
    .await
    .unwrap_err();
    assert!(
        matches!(err, ReconcileError::ApprovalExpired { .. }),
        "{err}"
    );
    assert_eq!(live(&sim, "ConfigMap", "a").unwrap()["data"]["k"], "3");
}

#[tokio::test(flavor = "multi_thread")]
async fn prune_guard_holds_mass_and_dangerous_deletions() {
    let sim = common::start(&[NS]).await;
    let t = target(&sim, Allowlist::unrestricted()).await;
    let app = spec(auto());
    let pvc = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}});
    let m1 = manifests(
        "r1",
        vec![cm("a", "1"), cm("b", "1"), cm("c", "1"), cm("d", "1"), pvc],
    );
    let o1 = pass(&app, &AppStatus::default(), &t, &m1, Trigger::Automatic)
        .await
        .unwrap();
    assert_eq!(
        o1.status.phase,
        Some(Phase::Synced),
        "{:?}",
        o1.status.message
    );

    // Dropping the PVC: Held even though automated.
    let m2 = manifests(
        "r2",
        vec![cm("a", "1"), cm("b", "1"), cm("c", "1"), cm("d", "1")],
    );
    let o2 = pass(&app, &o1.status, &t, &m2, Trigger::Automatic)
        .await
        .unwrap();
    assert_eq!(o2.status.phase, Some(Phase::Held));
    let msg = o2.status.message.clone().unwrap();
    assert!(msg.contains("PersistentVolumeClaim staging/data"), "{msg}");
    assert!(
        sim.cluster
            .get_object("v1", "PersistentVolumeClaim", Some(NS), "data")
            .is_some()
    );

    // Dropping three of five: more than half.
    let m3 = manifests("r3", vec![cm("a", "1"), sim_pvc()]);
    let o3 = pass(&app, &o1.status, &t, &m3, Trigger::Automatic)
        .await
        .unwrap();
    assert_eq!(o3.status.phase, Some(Phase::Held));
    assert!(
        o3.status.message.clone().unwrap().contains("3 of the 5"),
        "{:?}",
        o3.status.message
    );
    assert!(live(&sim, "ConfigMap", "b").is_some());

    // Approval lets it through.
    let o4 = pipeline::approve(
        p(&app, &o3.status, &t, &m3),
        o3.status.plan_hash.as_deref(),
        &options(),
        Timestamp::now(),
        &mut |_| {},
    )
    .await
    .unwrap();
    assert_eq!(o4.status.phase, Some(Phase::Synced));
    assert!(live(&sim, "ConfigMap", "b").is_none());
}

fn sim_pvc() -> Value {
    json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
}

#[tokio::test(flavor = "multi_thread")]
async fn sync_windows_block_automated_syncs() {
    let sim = common::start(&[NS]).await;
    let t = target(&sim, Allowlist::namespaces([NS])).await;
    let window = |kind, schedule: &str| SyncWindow {
        kind,
        schedule: schedule.into(),
        duration: "8h".into(),
        time_zone: None,
    };
    let denied = spec(SyncPolicy {
        sync_windows: vec![window(WindowKind::Deny, "0 22 * * *")],
        ..auto()
    });
    let m = manifests("r1", vec![cm("a", "1")]);
    let night = at("2026-11-30T23:00:00Z");
    let o = pipeline::reconcile(
        p(&denied, &AppStatus::default(), &t, &m),
        &Trigger::Automatic,
        &options(),
        night,
        &mut |_| {},
    )
    .await
    .unwrap();
    assert_eq!(o.status.phase, Some(Phase::Waiting));
    assert_eq!(
        o.status.message.as_deref(),
        Some("sync window closed; next opening at 2026-12-01T06:00:00Z")
    );
    assert!(live(&sim, "ConfigMap", "a").is_none());
    // A manual sync without the override waits too; with it, it applies.
    let manual = Trigger::Manual {
        override_windows: false,
    };
    let o = pipeline::reconcile(
        p(&denied, &AppStatus::default(), &t, &m),
        &manual,
        &options(),
        night,
        &mut |_| {},
    )
    .await
    .unwrap();
    assert_eq!(o.status.phase, Some(Phase::Waiting));
    let forced = Trigger::Manual {
        override_windows: true,
    };
    let o = pipeline::reconcile(
        p(&denied, &AppStatus::default(), &t, &m),
        &forced,
        &options(),
        night,
        &mut |_| {},
    )
    .await
    .unwrap();
    assert_eq!(o.status.phase, Some(Phase::Synced));

    // Allow windows: closed outside, open inside.
    let allowed = spec(SyncPolicy {
        sync_windows: vec![window(WindowKind::Allow, "0 9 * * 1-5")],
        ..auto()
    });
    let m2 = manifests("r2", vec![cm("a", "2")]);
    let saturday = at("2026-12-05T10:00:00Z");
    let o2 = pipeline::reconcile(
        p(&allowed, &o.status, &t, &m2),
        &Trigger::Automatic,
        &options(),
        saturday,
        &mut |_| {},
    )
    .await
    .unwrap();
    assert_eq!(o2.status.phase, Some(Phase::Waiting));
    assert!(o2.status.message.unwrap().ends_with("2026-12-07T09:00:00Z"));
    let monday = at("2026-12-07T10:00:00Z");
    let o3 = pipeline::reconcile(
        p(&allowed, &o.status, &t, &m2),
        &Trigger::Automatic,
        &options(),
        monday,
        &mut |_| {},
    )
    .await
    .unwrap();
    assert_eq!(o3.status.phase, Some(Phase::Synced));
    assert_eq!(live(&sim, "ConfigMap", "a").unwrap()["data"]["k"], "2");
}

#[tokio::test(flavor = "multi_thread")]
async fn self_heal_reverts_a_kubectl_edit() {
    let sim = common::start(&[NS]).await;
    let t = target(&sim, Allowlist::namespaces([NS])).await;
    let m = manifests("r1", vec![cm("a", "1")]);
    let o1 = pass(
        &spec(auto()),
        &AppStatus::default(),
        &t,
        &m,
        Trigger::Automatic,
    )
    .await
    .unwrap();
    sim.kubectl(
        &[
            "patch",
            "configmap",
            "a",
            "-n",
            NS,
            "--type=merge",
            "-p",
            r#"{"data":{"k":"tampered"}}"#,
        ],
        None,
    );

    // Without selfHeal: drift reported, not reverted.
    let o2 = pass(&spec(auto()), &o1.status, &t, &m, Trigger::Automatic)
        .await
        .unwrap();
    assert_eq!(o2.status.phase, Some(Phase::OutOfSync));
    assert!(
        o2.status.message.clone().unwrap().starts_with("drift"),
        "{:?}",
        o2.status.message
    );
    assert_eq!(
        live(&sim, "ConfigMap", "a").unwrap()["data"]["k"],
        "tampered"
    );
    assert!(o2.plan.text().contains("tampered"));

    // With selfHeal: re-applied.
    let heal = spec(SyncPolicy {
        self_heal: true,
        ..auto()
    });
    let o3 = pass(&heal, &o2.status, &t, &m, Trigger::Automatic)
        .await
        .unwrap();
    assert_eq!(o3.status.phase, Some(Phase::Synced));
    assert_eq!(live(&sim, "ConfigMap", "a").unwrap()["data"]["k"], "1");
}

#[tokio::test(flavor = "multi_thread")]
async fn health_waits_for_rollouts_and_jobs_or_degrades() {
    let sim = common::start(&[NS]).await;
    let t = target(&sim, Allowlist::namespaces([NS])).await;
    let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "migrate"},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "m", "image": "busybox"}]}}}});
    let sts = json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
        "spec": {"replicas": 2, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "db", "image": "postgres:17"}]}}}});
    let m = manifests("r1", vec![job, sts]);
    let mut seen = Vec::new();
    let o = pipeline::reconcile(
        p(&spec(auto()), &AppStatus::default(), &t, &m),
        &Trigger::Automatic,
        &options(),
        Timestamp::now(),
        &mut |s| seen.push(s.phase),
    )
    .await
    .unwrap();
    assert_eq!(seen, [Some(Phase::Progressing)]);
    assert_eq!(
        o.status.phase,
        Some(Phase::Synced),
        "{:?}",
        o.status.message
    );
    let job = sim
        .cluster
        .get_object("batch/v1", "Job", Some(NS), "migrate")
        .unwrap();
    assert!(
        job["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["type"] == "Complete")
    );

    // A cluster whose workloads never become ready within the timeout: Degraded.
    kubesim::install_crypto_provider();
    let slow = kubesim::Cluster::start(kubesim::ClusterConfig {
        namespaces: vec![NS.into()],
        ready_delay: Duration::from_secs(3600),
        ..Default::default()
    })
    .await
    .unwrap();
    let t2 = Target {
        cluster: "slow".into(),
        client: slow.client().await.unwrap(),
        allowlist: Allowlist::namespaces([NS]),
        kinds: Default::default(),
    };
    let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}});
    let short = Options {
        health_timeout: Duration::from_millis(300),
        ..options()
    };
    let o = pipeline::reconcile(
        p(
            &spec(auto()),
            &AppStatus::default(),
            &t2,
            &manifests("r1", vec![deploy]),
        ),
        &Trigger::Automatic,
        &short,
        Timestamp::now(),
        &mut |_| {},
    )
    .await
    .unwrap();
    assert_eq!(o.status.phase, Some(Phase::Degraded));
    assert_eq!(o.status.health, Some(HealthState::Degraded));
    assert!(
        o.status
            .message
            .clone()
            .unwrap()
            .contains("Deployment staging/web"),
        "{:?}",
        o.status.message
    );
    assert!(
        o.status
            .conditions
            .iter()
            .any(|c| c.type_ == "Stalled" && c.status == "True")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn converges_through_injected_api_errors() {
    let sim = common::start(&[NS]).await;
    let t = target(&sim, Allowlist::namespaces([NS])).await;
    let app = spec(auto());
    let m = manifests("r1", vec![cm("a", "1"), cm("b", "1"), cm("c", "1")]);
    sim.cluster.set_faults(kubesim::Faults {
        error_rate: 0.1,
        error_status: 503,
        ..Default::default()
    });
    let mut status = AppStatus::default();
    let mut failures = 0;
    for _ in 0..200 {
        match pass(&app, &status, &t, &m, Trigger::Automatic).await {
            Ok(o) => {
                status = o.status;
                if status.phase == Some(Phase::Synced) {
                    break;
                }
            }
            Err(e) => {
                failures += 1;
                status = e.status(&status, Some(&m), Timestamp::now());
                assert_eq!(status.phase, Some(Phase::Failed));
                assert!(status.message.is_some());
            }
        }
    }
    sim.cluster.set_faults(kubesim::Faults::default());
    assert_eq!(
        status.phase,
        Some(Phase::Synced),
        "after {failures} failed passes"
    );
    for name in ["a", "b", "c"] {
        assert!(live(&sim, "ConfigMap", name).is_some());
    }
    assert_eq!(status.inventory.len(), 3);
    // A clean pass afterwards is a no-op.
    let o = pass(&app, &status, &t, &m, Trigger::Automatic)
        .await
        .unwrap();
    assert!(o.plan.is_noop(), "{}", o.plan.text());
}

/// An automatic pass relying on `known`.
async fn known_pass(
    spec: &AppSpec,
    previous: &AppStatus,
    t: &Target,
    m: &Manifests,
    known: Option<Known<'_>>,
) -> Outcome {
    let pass = Pass {
        known,
        journal: None,
        ..p(spec, previous, t, m)
    };
    pipeline::reconcile(
        pass,
        &Trigger::Automatic,
        &options(),
        Timestamp::now(),
        &mut |_| {},
    )
    .await
    .unwrap()
}

/// The live states a drift watch would report: read from kubesim's store directly.
struct Snapshot(std::collections::HashMap<String, LiveState>);

impl Snapshot {
    fn of(sim: &common::Sim, names: &[&str]) -> Snapshot {
        Snapshot(
            names
                .iter()
                .map(|name| {
                    let state = match live(sim, "ConfigMap", name) {
                        Some(o) => LiveState::Present {
                            resource_version: o["metadata"]["resourceVersion"]
                                .as_str()
                                .unwrap()
                                .to_string(),
                            digest: digest::live(&o),
                        },
                        None => LiveState::Absent,
                    };
                    (name.to_string(), state)
                })
                .collect(),
        )
    }
}

impl LiveStates for Snapshot {
    fn state(&self, object: &ObjectRef) -> LiveState {
        self.0
            .get(&object.name)
            .cloned()
            .unwrap_or(LiveState::Unknown)
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn verified_objects_skip_their_dry_runs_until_the_live_state_changes() {
    let sim = common::start(&[NS]).await;
    let throttles = Throttles::default();
    let mut t = target(&sim, Allowlist::namespaces([NS])).await;
    t.client = throttles.wrap("staging", t.client);
    let requests = || throttles.counts()[0].requests;
    let app = spec(auto());
    let names = ["a", "b", "c"];
    let m = manifests("r1", names.iter().map(|n| cm(n, "1")).collect());
    // First sync: a watch that knows the objects are absent spares the reads before the
    // dry-runs; wardn's own applies are recorded as agreements.
    let absent = Snapshot::of(&sim, &names);
    let nothing = Verified::default();
    let before = requests();
    let o1 = known_pass(
        &app,
        &AppStatus::default(),
        &t,
        &m,
        Some(Known {
            verified: &nothing,
            live: &absent,
        }),
    )
    .await;
    let first = requests() - before;
    assert_eq!(o1.status.phase, Some(Phase::Synced));
    assert_eq!(o1.plan.summary().creates, 3);
    assert_eq!(o1.verified.len(), 3, "every apply is an agreement");
    // discovery (1) + 3 dry-runs + 3 applies; no GETs (health comes from the apply answers)
    assert_eq!(first, 7, "requests of the first sync");

    // Nothing changed: no request at all.
    let watched = Snapshot::of(&sim, &names);
    let before = requests();
    let o2 = known_pass(
        &app,
        &o1.status,
        &t,
        &m,
        Some(Known {
            verified: &o1.verified,
            live: &watched,
        }),
    )
    .await;
    assert_eq!(requests() - before, 0, "a verified no-op pass asks nothing");
    assert_eq!(o2.status.phase, Some(Phase::Synced));
    assert_eq!(o2.plan.summary().unchanged, 3);
    assert_eq!(o2.verified, o1.verified);

    // Without `known` (manual syncs, approvals, refresh) every object is dry-run again.
    let before = requests();
    let o3 = known_pass(&app, &o2.status, &t, &m, None).await;
    assert_eq!(requests() - before, 6, "a GET and a dry-run per object");
    assert_eq!(o3.verified.len(), 3, "the same live states agree again");

    // Someone edits b: its live digest changes, so b (only) is dry-run and found changed.
    sim.kubectl(
        &[
            "patch",
            "configmap",
            "b",
            "-n",
            NS,
            "--type=merge",
            "-p",
            r#"{"data":{"k":"edited"}}"#,
        ],
        None,
    );
    let edited = Snapshot::of(&sim, &names);
    let before = requests();
    let o4 = known_pass(
        &app,
        &o3.status,
        &t,
        &m,
        Some(Known {
            verified: &o3.verified,
            live: &edited,
        }),
    )
    .await;
    assert_eq!(o4.plan.summary().updates, 1, "{:?}", o4.plan.summary());
    assert_eq!(o4.plan.summary().unchanged, 2);
    assert_eq!(requests() - before, 2, "GET and dry-run of b only");
    assert_eq!(
        o4.status.phase,
        Some(Phase::OutOfSync),
        "drift without selfHeal is reported"
    );
    assert_eq!(o4.verified.len(), 2, "b no longer agrees");

    // A watch that lost track of the objects (Unknown) means asking the cluster again.
    let unknown = Snapshot(Default::default());
    let before = requests();
    known_pass(
        &app,
        &o4.status,
        &t,
        &m,
        Some(Known {
            verified: &o4.verified,
            live: &unknown,
        }),
    )
    .await;
    assert_eq!(requests() - before, 6);
}

/// Issue #12, item 3: a CRD served at `v1alpha1` and `v1`; an automated, pruning App moves a
/// Gadget from `ex.com/v1alpha1` to `ex.com/v1`. The move updates the object in place (same
/// uid) and deletes nothing; the App is Synced and Healthy, and the inventory stores the new
/// version. Removing the Gadget later prunes it, looked up by the stored version.
#[tokio::test(flavor = "multi_thread")]
async fn a_version_move_updates_in_place_and_prunes_nothing() {
    let sim = common::start(&[NS]).await;
    let t = target(&sim, Allowlist::unrestricted()).await;
    let version = |name: &str, storage: bool| {
        json!({"name": name, "served": true, "storage": storage,
            "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}})
    };
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.ex.com"},
        "spec": {"group": "ex.com", "scope": "Namespaced",
            "names": {"kind": "Gadget", "plural": "gadgets", "singular": "gadget", "listKind": "GadgetList"},
            "versions": [version("v1alpha1", false), version("v1", true)]}});
    let gadget = |api_version: &str, size: u32| json!({"apiVersion": api_version, "kind": "Gadget", "metadata": {"name": "g"}, "spec": {"size": size}});
    let app = spec(auto());
    let m1 = manifests(
        "r1",
        vec![crd.clone(), cm("a", "1"), gadget("ex.com/v1alpha1", 1)],
    );
    let o1 = pass(&app, &AppStatus::default(), &t, &m1, Trigger::Automatic)
        .await
        .unwrap();
    assert_eq!(
        o1.status.phase,
        Some(Phase::Synced),
        "{:?}",
        o1.status.message
    );
    let before = sim
        .cluster
        .get_object("ex.com/v1", "Gadget", Some(NS), "g")
        .expect("the Gadget exists, served at v1 too");
    assert!(
        sim.cluster
            .get_object("ex.com/v1alpha1", "Gadget", Some(NS), "g")
            .is_some(),
        "and at v1alpha1"
    );

    let m2 = manifests(
        "r2",
        vec![crd.clone(), cm("a", "1"), gadget("ex.com/v1", 2)],
    );
    let o2 = pass(&app, &o1.status, &t, &m2, Trigger::Automatic)
        .await
        .unwrap();
    assert_eq!(
        o2.status.phase,
        Some(Phase::Synced),
        "{:?}",
        o2.status.message
    );
    assert_eq!(o2.status.health, Some(HealthState::Healthy));
    assert!(o2.plan.prunes.is_empty(), "{}", o2.plan.text());
    assert_eq!(o2.pruned.as_ref().unwrap().deleted, Vec::<ObjectRef>::new());
    let summary = o2.status.plan.unwrap();
    assert_eq!(
        (summary.creates, summary.updates, summary.prunes),
        (0, 1, 0)
    );
    let after = sim
        .cluster
        .get_object("ex.com/v1", "Gadget", Some(NS), "g")
        .expect("the Gadget was not deleted");
    assert_eq!(
        after["metadata"]["uid"], before["metadata"]["uid"],
        "updated in place"
    );
    assert_eq!(after["spec"]["size"], 2);
    let stored = o2
        .status
        .inventory
        .iter()
        .find(|r| r.kind == "Gadget")
        .unwrap();
    assert_eq!(
        stored.api_version, "ex.com/v1",
        "the inventory stores the new version"
    );
    assert_eq!(o2.status.inventory.len(), 3);

    // Removed from the source: pruned, looked up by the version the inventory stored.
    let m3 = manifests("r3", vec![crd, cm("a", "1")]);
    let o3 = pass(&app, &o2.status, &t, &m3, Trigger::Automatic)
        .await
        .unwrap();
    assert_eq!(
        o3.status.phase,
        Some(Phase::Synced),
        "{:?}",
        o3.status.message
    );
    assert_eq!(o3.plan.prunes.len(), 1);
    assert_eq!(o3.plan.prunes[0].object.api_version, "ex.com/v1");
    assert_eq!(o3.pruned.unwrap().deleted.len(), 1);
    assert!(
        sim.cluster
            .get_object("ex.com/v1", "Gadget", Some(NS), "g")
            .is_none()
    );
}
