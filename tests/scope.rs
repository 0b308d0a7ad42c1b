//! Object scope comes from the destination cluster, never from the App (issue #12, items 1 and
//! 7), against kubesim: rendered CRDs redeclaring built-in kinds, a cluster-scoped CRD kind the
//! cluster already serves, a CRD for a kind not served yet, an unknown kind, and prune after the
//! allowlist was narrowed.

mod common;

use std::time::Duration;

use jiff::Timestamp;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use wardn::app::{AppSpec, AppStatus, Destination, Phase, SyncPolicy};
use wardn::clusters::allowlist::Allowlist;
use wardn::reconcile::decide::Trigger;
use wardn::reconcile::error::{ErrorClass, ReconcileError};
use wardn::reconcile::pass::{Manifests, Options, Outcome, Pass, Target};
use wardn::reconcile::pipeline;
use wardn::render::PackedObjects;
use wardn::sources::spec::{DirectorySpec, SourceSpec, SourceType};

const NS: &str = "staging";

fn spec() -> AppSpec {
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
        sync_policy: SyncPolicy {
            automated: true,
            prune: true,
            ..Default::default()
        },
        promotion: None,
        notify: Vec::new(),
        targets: Default::default(),
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

async fn target(sim: &common::Sim, allowlist: Allowlist) -> Target {
    Target {
        cluster: "staging".into(),
        client: sim.cluster.client().await.unwrap(),
        allowlist,
        kinds: Default::default(),
    }
}

async fn pass(prev: &AppStatus, t: &Target, m: &Manifests) -> Result<Outcome, ReconcileError> {
    let spec = spec();
    pipeline::reconcile(
        Pass {
            app: "org-my-org/my-app",
            spec: &spec,
            previous: prev,
            target: t,
            manifests: m,
            known: None,
            journal: None,
        },
        &Trigger::Automatic,
        &Options {
            health_timeout: Duration::from_secs(60),
            crd_timeout: Duration::from_secs(30),
            poll: Duration::from_millis(100),
            approval_ttl: None,
        },
        Timestamp::now(),
        &mut |_| {},
    )
    .await
}

fn crd(group: &str, kind: &str, plural: &str, scope: &str) -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {"group": group, "scope": scope,
            "names": {"kind": kind, "plural": plural, "singular": kind.to_lowercase(), "listKind": format!("{kind}List")},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}})
}

/// The attack of issue #12: CRDs redeclaring CustomResourceDefinition and ClusterRoleBinding
/// as Namespaced, and a binding of the App's ServiceAccount to cluster-admin.
fn attack() -> Vec<Value> {
    vec![
        crd(
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            "customresourcedefinitions",
            "Namespaced",
        ),
        crd(
            "rbac.authorization.k8s.io",
            "ClusterRoleBinding",
            "clusterrolebindings",
            "Namespaced",
        ),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "pwn"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": NS}]}),
    ]
}

fn nothing_of_the_attack_exists(sim: &common::Sim) {
    let get = |av: &str, kind: &str, name: &str| {
        sim.cluster.get_object(av, kind, None, name).is_some()
            || sim.cluster.get_object(av, kind, Some(NS), name).is_some()
    };
    assert!(!get(
        "rbac.authorization.k8s.io/v1",
        "ClusterRoleBinding",
        "pwn"
    ));
    for name in [
        "customresourcedefinitions.apiextensions.k8s.io",
        "clusterrolebindings.rbac.authorization.k8s.io",
    ] {
        assert!(!get(
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            name
        ));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn crds_redeclaring_builtin_kinds_are_refused_before_any_write() {
    let sim = common::start(&[NS]).await;
    let m = manifests("r1", attack());

    // Under an allowlist, the binding and the CRDs are cluster-scoped whatever the App says:
    // a 403 naming them, before any request (every request would fail with a 500).
    let restricted = target(&sim, Allowlist::namespaces([NS])).await;
    sim.cluster.set_faults(kubesim::Faults {
        error_rate: 1.0,
        error_status: 500,
        ..Default::default()
    });
    let err = pass(&AppStatus::default(), &restricted, &m)
        .await
        .unwrap_err();
    sim.cluster.set_faults(kubesim::Faults::default());
    assert_eq!(err.class(), ErrorClass::Forbidden, "{err}");
    let text = err.to_string();
    assert!(
        text.contains(
            "ClusterRoleBinding pwn (rbac.authorization.k8s.io/v1): cluster-scoped objects are not allowed on cluster staging"
        ),
        "{text}"
    );
    assert!(
        text.contains("CustomResourceDefinition clusterrolebindings.rbac.authorization.k8s.io"),
        "{text}"
    );
    nothing_of_the_attack_exists(&sim);

    // Unrestricted, the CRDs themselves are refused, each named.
    let open = target(&sim, Allowlist::unrestricted()).await;
    let err = pass(&AppStatus::default(), &open, &m).await.unwrap_err();
    assert_eq!(err.class(), ErrorClass::Invalid, "{err}");
    let text = err.to_string();
    for name in [
        "customresourcedefinitions.apiextensions.k8s.io",
        "clusterrolebindings.rbac.authorization.k8s.io",
    ] {
        assert!(
            text.contains(&format!("CustomResourceDefinition {name} defines")),
            "{text}"
        );
    }
    nothing_of_the_attack_exists(&sim);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cluster_scoped_kind_the_cluster_serves_is_cluster_scoped() {
    let sim = common::start(&[NS]).await;
    // The cluster admin installed the Gateway API's GatewayClass (cluster-scoped), approved
    // for its protected group as the upstream CRDs are.
    let mut gateway = crd(
        "gateway.networking.k8s.io",
        "GatewayClass",
        "gatewayclasses",
        "Cluster",
    );
    gateway["metadata"]["annotations"] = json!({
        "api-approved.kubernetes.io": "https://github.com/kubernetes-sigs/gateway-api/pull/2466"
    });
    sim.kubectl(&["apply", "-f", "-"], Some(&gateway.to_string()));
    let class = json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
        "metadata": {"name": "internet"}, "spec": {"controllerName": "example.com/gw"}});
    let m = manifests("r1", vec![class]);

    let restricted = target(&sim, Allowlist::namespaces([NS])).await;
    let err = pass(&AppStatus::default(), &restricted, &m)
        .await
        .unwrap_err();
    assert_eq!(err.class(), ErrorClass::Forbidden, "{err}");
    assert!(
        err.to_string().contains(
            "GatewayClass internet (gateway.networking.k8s.io/v1): cluster-scoped objects are not allowed on cluster staging"
        ),
        "{err}"
    );
    let av = "gateway.networking.k8s.io/v1";
    assert!(
        sim.cluster
            .get_object(av, "GatewayClass", None, "internet")
            .is_none()
    );
    assert!(
        sim.cluster
            .get_object(av, "GatewayClass", Some(NS), "internet")
            .is_none()
    );

    // Unrestricted, it is applied as what it is: cluster-scoped, no namespace.
    let open = target(&sim, Allowlist::unrestricted()).await;
    let o = pass(&AppStatus::default(), &open, &m).await.unwrap();
    assert_eq!(o.status.inventory.len(), 1);
    assert_eq!(o.status.inventory[0].namespace, None);
    assert!(
        sim.cluster
            .get_object(av, "GatewayClass", None, "internet")
            .is_some()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rendered_crd_decides_only_kinds_the_cluster_does_not_serve() {
    let sim = common::start(&[NS]).await;
    let open = target(&sim, Allowlist::unrestricted()).await;

    // Not served yet: the rendered CRD's scope holds (existing behaviour).
    let global =
        json!({"apiVersion": "example.com/v1", "kind": "Global", "metadata": {"name": "g1"}});
    let m = manifests(
        "r1",
        vec![
            global.clone(),
            crd("example.com", "Global", "globals", "Cluster"),
        ],
    );
    let o = pass(&AppStatus::default(), &open, &m).await.unwrap();
    assert_eq!(
        o.status.phase,
        Some(Phase::Synced),
        "{:?}",
        o.status.message
    );
    assert!(
        sim.cluster
            .get_object("example.com/v1", "Global", None, "g1")
            .is_some()
    );
    // Served now with the same scope: the same App passes again.
    let o2 = pass(&o.status, &open, &m).await.unwrap();
    assert!(o2.plan.is_noop(), "{}", o2.plan.text());

    // Served as Cluster, redeclared Namespaced by another App: refused, naming the CRD.
    let m = manifests(
        "r2",
        vec![
            global,
            crd("example.com", "Global", "globals", "Namespaced"),
        ],
    );
    let err = pass(&AppStatus::default(), &open, &m).await.unwrap_err();
    assert_eq!(err.class(), ErrorClass::Invalid, "{err}");
    assert!(
        err.to_string().contains(
            "CustomResourceDefinition globals.example.com declares Global (example.com) Namespaced, but the cluster serves it Cluster"
        ),
        "{err}"
    );
    assert!(
        sim.cluster
            .get_object("example.com/v1", "Global", Some(NS), "g1")
            .is_none()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_kind_whose_scope_cannot_be_established_is_refused() {
    let sim = common::start(&[NS]).await;
    let open = target(&sim, Allowlist::unrestricted()).await;
    for (av, kind) in [("apps/v1", "Frobnicator"), ("example.com/v1", "Gadget")] {
        let object = json!({"apiVersion": av, "kind": kind, "metadata": {"name": "x"}});
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "before"}});
        let m = manifests("r1", vec![cm, object]);
        let err = pass(&AppStatus::default(), &open, &m).await.unwrap_err();
        assert_eq!(err.class(), ErrorClass::Invalid, "{err}");
        let text = err.to_string();
        assert!(
            text.contains(&format!("{kind} x ({av}): unknown kind")) && text.contains(kind),
            "{text}"
        );
        assert!(
            sim.cluster
                .get_object("v1", "ConfigMap", Some(NS), "before")
                .is_none(),
            "nothing is written"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn prune_leaves_what_the_allowlist_no_longer_allows() {
    let sim = common::start(&[NS, "old"]).await;
    let cm = |name: &str, ns: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}, "data": {"k": "v"}});
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "reader"}, "rules": []});
    let open = target(&sim, Allowlist::unrestricted()).await;
    // Four objects stay rendered, so that pruning two later is not a mass deletion.
    let kept: Vec<Value> = ["a", "b", "c", "d"].iter().map(|n| cm(n, NS)).collect();
    let mut all = kept.clone();
    all.extend([cm("x", "old"), role]);
    let o1 = pass(&AppStatus::default(), &open, &manifests("r1", all))
        .await
        .unwrap();
    assert_eq!(o1.status.inventory.len(), 6);

    // The cluster's allowlist is narrowed to `staging`; the App stops rendering x and the role.
    let narrowed = Target {
        allowlist: Allowlist::namespaces([NS]),
        ..open.clone()
    };
    let m2 = manifests("r2", kept.clone());
    let o2 = pass(&o1.status, &narrowed, &m2).await.unwrap();
    assert!(o2.plan.prunes.is_empty(), "{}", o2.plan.text());
    assert!(
        sim.cluster
            .get_object("v1", "ConfigMap", Some("old"), "x")
            .is_some(),
        "no DELETE outside today's allowlist"
    );
    assert!(
        sim.cluster
            .get_object(
                "rbac.authorization.k8s.io/v1",
                "ClusterRole",
                None,
                "reader"
            )
            .is_some(),
        "no DELETE of a cluster-scoped object under a restricted allowlist"
    );
    assert_eq!(o2.status.inventory.len(), 6, "both stay in the inventory");
    let condition = o2
        .status
        .conditions
        .iter()
        .find(|c| c.type_ == "OutOfScope")
        .unwrap_or_else(|| panic!("no OutOfScope condition: {:?}", o2.status.conditions));
    assert_eq!(condition.status, "True");
    assert!(
        condition.message.contains("ConfigMap old/x (v1)")
            && condition
                .message
                .contains("ClusterRole reader (rbac.authorization.k8s.io/v1)"),
        "{}",
        condition.message
    );

    // Once the allowlist allows them again, prune deletes them and the condition goes.
    let o3 = pass(&o2.status, &open, &manifests("r3", kept))
        .await
        .unwrap();
    assert_eq!(o3.plan.prunes.len(), 2, "{}", o3.plan.text());

    assert!(
        sim.cluster
            .get_object("v1", "ConfigMap", Some("old"), "x")
            .is_none()
    );
    assert!(!o3.status.conditions.iter().any(|c| c.type_ == "OutOfScope"));
}
