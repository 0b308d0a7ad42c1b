//! The Plan: what one reconcile pass would do, and its hash. The hash binds the revision, the
//! rendered digest and the live resourceVersion of every object the plan touches, so an
//! approval names exactly one change.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::app::PlanSummary;
use crate::app::promotion::PromotedFrom;
use crate::diff::{Action, ObjectDiff};
use crate::object::ObjectRef;

/// An object of the previous inventory that the plan deletes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prune {
    /// Which object.
    pub object: ObjectRef,
    /// Its live resourceVersion, bound into the plan hash.
    pub live_resource_version: String,
}

/// A plan: per-object diffs, prunes, and the hash an approval must name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// The source revision rendered.
    pub revision: String,
    /// sha256 of the rendered manifests.
    pub rendered_digest: String,
    /// One diff per rendered object, in rendered order.
    pub objects: Vec<ObjectDiff>,
    /// Objects to delete.
    pub prunes: Vec<Prune>,
    /// Inventory entries no longer rendered that prune leaves alone because today's allowlist
    /// does not allow their namespace (or cluster-scoped objects): kept in the inventory and
    /// reported, never deleted. Not part of the hash: the plan does nothing to them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub out_of_scope: Vec<ObjectRef>,
    /// The promotion whose pinned images the rendered objects carry (the App's
    /// `status.promotedFrom`). Not part of the hash: the pins are in the rendered digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promotion: Option<PromotedFrom>,
    /// sha256 (hex) over revision, digest and the touched objects' live resourceVersions.
    pub plan_hash: String,
}

fn count(objects: &[ObjectDiff], action: Action) -> u32 {
    u32::try_from(objects.iter().filter(|d| d.action == action).count()).unwrap_or(u32::MAX)
}

impl Plan {
    /// Builds the plan of App `app` (`namespace/name`) on cluster `cluster` and computes its
    /// hash, which covers the App and cluster too: the same change of two Apps, or of one App
    /// on two clusters, has two hashes, so an approval names exactly one plan of one App.
    pub fn new(
        app: &str,
        cluster: &str,
        revision: String,
        rendered_digest: String,
        objects: Vec<ObjectDiff>,
        prunes: Vec<Prune>,
    ) -> Plan {
        let plan_hash = hash(app, cluster, &revision, &rendered_digest, &objects, &prunes);
        Plan {
            revision,
            rendered_digest,
            objects,
            prunes,
            out_of_scope: Vec::new(),
            promotion: None,
            plan_hash,
        }
    }

    /// The plan with `objects` recorded as out of the allowlist's scope (see
    /// [`Plan::out_of_scope`]); the hash is unchanged.
    pub fn with_out_of_scope(mut self, objects: Vec<ObjectRef>) -> Plan {
        self.out_of_scope = objects;
        self
    }

    /// The plan with the promotion whose pins it carries (see [`Plan::promotion`]).
    pub fn with_promotion(mut self, promotion: Option<PromotedFrom>) -> Plan {
        self.promotion = promotion;
        self
    }

    /// The counts shown in status.
    pub fn summary(&self) -> PlanSummary {
        PlanSummary {
            creates: count(&self.objects, Action::Create),
            updates: count(&self.objects, Action::Update),
            unchanged: count(&self.objects, Action::Unchanged),
            prunes: u32::try_from(self.prunes.len()).unwrap_or(u32::MAX),
        }
    }

    /// Whether the plan changes nothing.
    pub fn is_noop(&self) -> bool {
        self.prunes.is_empty() && self.objects.iter().all(|d| d.action == Action::Unchanged)
    }

    /// The unified text diff of the whole plan (Secret values masked), prunes included,
    /// after the promotion it carries (`# promotion from CLUSTER/APP at REVISION` and one
    /// `# repo:tag → repo@sha256:…` line per pinned image).
    pub fn text(&self) -> String {
        let mut out = String::new();
        if let Some(promotion) = &self.promotion {
            out.push_str(&format!(
                "# {}
",
                promotion.headline()
            ));
            for line in promotion.image_lines() {
                out.push_str(&format!(
                    "#   {line}
"
                ));
            }
        }
        out.extend(self.objects.iter().map(|d| d.text.as_str()));
        for p in &self.prunes {
            out.push_str(&format!("# prune {}\n", p.object));
        }
        for id in &self.out_of_scope {
            out.push_str(&format!(
                "# not pruned, outside the cluster's allowlist: {id}\n"
            ));
        }
        out
    }
}

fn hash(
    app: &str,
    cluster: &str,
    revision: &str,
    digest: &str,
    objects: &[ObjectDiff],
    prunes: &[Prune],
) -> String {
    let mut lines: Vec<String> = objects
        .iter()
        .filter(|d| d.action != Action::Unchanged)
        .map(|d| {
            format!(
                "{:?}\t{}\t{}",
                d.action,
                d.object,
                d.live_resource_version.as_deref().unwrap_or("-")
            )
        })
        .chain(
            prunes
                .iter()
                .map(|p| format!("Prune\t{}\t{}", p.object, p.live_resource_version)),
        )
        .collect();
    lines.sort();
    let mut h = Sha256::new();
    h.update(format!(
        "app\t{app}\ncluster\t{cluster}\nrevision\t{revision}\ndigest\t{digest}\n"
    ));
    for l in lines {
        h.update(l.as_bytes());
        h.update(b"\n");
    }
    hex::encode(h.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diff(name: &str, action: Action, rv: Option<&str>) -> ObjectDiff {
        ObjectDiff {
            object: ObjectRef {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                namespace: Some("n".into()),
                name: name.into(),
            },
            action,
            live_resource_version: rv.map(str::to_string),
            changes: vec![],
            text: String::new(),
        }
    }

    #[test]
    fn hash_binds_revision_digest_and_touched_versions() {
        let base = Plan::new(
            "ns/app",
            "c",
            "r1".into(),
            "d1".into(),
            vec![
                diff("a", Action::Update, Some("5")),
                diff("b", Action::Unchanged, Some("9")),
            ],
            vec![],
        );
        let same = Plan::new(
            "ns/app",
            "c",
            "r1".into(),
            "d1".into(),
            vec![
                diff("a", Action::Update, Some("5")),
                diff("b", Action::Unchanged, Some("10")),
            ],
            vec![],
        );
        assert_eq!(
            base.plan_hash, same.plan_hash,
            "untouched objects do not matter"
        );
        for other in [
            Plan::new(
                "ns/app",
                "c",
                "r2".into(),
                "d1".into(),
                base.objects.clone(),
                vec![],
            ),
            Plan::new(
                "ns/app",
                "c",
                "r1".into(),
                "d2".into(),
                base.objects.clone(),
                vec![],
            ),
            Plan::new(
                "ns/app",
                "c",
                "r1".into(),
                "d1".into(),
                vec![
                    diff("a", Action::Update, Some("6")),
                    diff("b", Action::Unchanged, Some("9")),
                ],
                vec![],
            ),
        ] {
            assert_ne!(base.plan_hash, other.plan_hash);
        }
        assert_eq!(base.plan_hash.len(), 64);
        let (objects, prunes) = (base.objects.clone(), base.prunes.clone());
        let other_app = Plan::new("ns/other", "c", "r1".into(), "d1".into(), objects, prunes);
        assert_ne!(base.plan_hash, other_app.plan_hash, "another App");
        let elsewhere = Plan::new(
            "ns/app",
            "c2",
            "r1".into(),
            "d1".into(),
            base.objects,
            vec![],
        );
        assert_ne!(
            base.plan_hash, elsewhere.plan_hash,
            "the same App on another cluster"
        );
    }

    #[test]
    fn summary_and_noop() {
        let prune = Prune {
            object: diff("z", Action::Unchanged, None).object,
            live_resource_version: "3".into(),
        };
        let p = Plan::new(
            "ns/app",
            "c",
            "r".into(),
            "d".into(),
            vec![
                diff("a", Action::Create, None),
                diff("b", Action::Unchanged, Some("1")),
            ],
            vec![prune],
        );
        assert_eq!(
            p.summary(),
            PlanSummary {
                creates: 1,
                updates: 0,
                unchanged: 1,
                prunes: 1
            }
        );
        assert!(!p.is_noop());
        assert!(p.text().contains("# prune ConfigMap n/z"));
        assert!(
            Plan::new(
                "ns/app",
                "c",
                "r".into(),
                "d".into(),
                vec![diff("b", Action::Unchanged, Some("1"))],
                vec![]
            )
            .is_noop()
        );
    }
}
