//! Decide: given a plan, the sync policy, the previous status, the sync windows and what
//! triggered the pass, whether to apply, hold, wait, report drift, or do nothing. Pure.

use jiff::Timestamp;

use super::plan::Plan;
use crate::app::window::{Window, is_open, next_opening};
use crate::app::{AppStatus, SyncPolicy};
use crate::time::rfc3339;

/// What started a reconcile pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trigger {
    /// A new revision, a drift check or a periodic pass.
    Automatic,
    /// An operator asked for a sync; `override_windows` syncs even inside a closed window
    /// (audited by the caller).
    Manual {
        /// Whether closed sync windows are overridden.
        override_windows: bool,
    },
    /// An operator approved the Held plan (already verified to be the same plan).
    Approved,
}

/// The decision for one pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Nothing to do: the cluster matches.
    Synced,
    /// Apply the plan now.
    Apply,
    /// Stage the plan for approval, with the reason.
    Held(String),
    /// A sync window blocks; the message names the next opening.
    Waiting(String),
    /// The cluster differs but policy says not to apply on its own; the message says why.
    OutOfSync(String),
}

/// Decides what to do with `plan`; `guard` is the prune guard's refusal, if any.
pub fn decide(
    plan: &Plan,
    policy: &SyncPolicy,
    previous: &AppStatus,
    windows: &[Window],
    trigger: &Trigger,
    guard: Option<&str>,
    now: Timestamp,
) -> Decision {
    if plan.is_noop() {
        return Decision::Synced;
    }
    if *trigger == Trigger::Approved {
        return Decision::Apply;
    }
    if let Some(reason) = guard {
        return Decision::Held(reason.to_string());
    }
    if policy.requires_approval {
        return Decision::Held(format!("plan {} waits for approval", plan.plan_hash));
    }
    let window_closed = !is_open(windows, now);
    let waiting = || {
        let next = next_opening(windows, now)
            .map(rfc3339)
            .unwrap_or_else(|| "unknown".to_string());
        Decision::Waiting(format!("sync window closed; next opening at {next}"))
    };
    match trigger {
        Trigger::Manual { override_windows } => {
            if window_closed && !override_windows {
                waiting()
            } else {
                Decision::Apply
            }
        }
        _ => {
            if !policy.automated {
                return Decision::OutOfSync("automated sync is off; sync manually".into());
            }
            let drift_only = previous.synced_revision.as_deref() == Some(plan.revision.as_str())
                && previous.synced_digest.as_deref() == Some(plan.rendered_digest.as_str());
            if drift_only && !policy.self_heal {
                let s = plan.summary();
                return Decision::OutOfSync(format!(
                    "drift: {} objects differ from revision {} and {} are missing (selfHeal is off)",
                    s.updates, plan.revision, s.creates
                ));
            }
            if window_closed {
                waiting()
            } else {
                Decision::Apply
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::window::parse_all;
    use crate::app::{SyncWindow, WindowKind};
    use crate::diff::{Action, ObjectDiff};
    use crate::object::ObjectRef;

    fn plan(action: Action) -> Plan {
        let d = ObjectDiff {
            object: ObjectRef {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                namespace: Some("n".into()),
                name: "c".into(),
            },
            action,
            live_resource_version: None,
            changes: vec![],
            text: String::new(),
        };
        Plan::new("ns/app", "c", "r2".into(), "d2".into(), vec![d], vec![])
    }

    fn auto() -> SyncPolicy {
        SyncPolicy {
            automated: true,
            ..Default::default()
        }
    }

    fn now() -> Timestamp {
        "2026-11-30T23:00:00Z".parse().unwrap()
    }

    fn go(
        p: &Plan,
        policy: &SyncPolicy,
        prev: &AppStatus,
        ws: &[Window],
        t: &Trigger,
        guard: Option<&str>,
    ) -> Decision {
        decide(p, policy, prev, ws, t, guard, now())
    }

    #[test]
    fn noop_is_synced_and_changes_apply() {
        let prev = AppStatus::default();
        assert_eq!(
            go(
                &plan(Action::Unchanged),
                &auto(),
                &prev,
                &[],
                &Trigger::Automatic,
                None
            ),
            Decision::Synced
        );
        assert_eq!(
            go(
                &plan(Action::Update),
                &auto(),
                &prev,
                &[],
                &Trigger::Automatic,
                None
            ),
            Decision::Apply
        );
        assert!(matches!(
            go(
                &plan(Action::Update),
                &SyncPolicy::default(),
                &prev,
                &[],
                &Trigger::Automatic,
                None
            ),
            Decision::OutOfSync(_)
        ));
        assert_eq!(
            go(
                &plan(Action::Update),
                &SyncPolicy::default(),
                &prev,
                &[],
                &Trigger::Manual {
                    override_windows: false
                },
                None
            ),
            Decision::Apply
        );
    }

    #[test]
    fn approval_and_guard_hold_until_approved() {
        let prev = AppStatus::default();
        let gated = SyncPolicy {
            requires_approval: true,
            ..auto()
        };
        let p = plan(Action::Create);
        assert_eq!(
            go(&p, &gated, &prev, &[], &Trigger::Automatic, None),
            Decision::Held(format!("plan {} waits for approval", p.plan_hash))
        );
        assert_eq!(
            go(
                &p,
                &auto(),
                &prev,
                &[],
                &Trigger::Automatic,
                Some("prune guard: x")
            ),
            Decision::Held("prune guard: x".into())
        );
        assert_eq!(
            go(
                &p,
                &gated,
                &prev,
                &[],
                &Trigger::Approved,
                Some("prune guard: x")
            ),
            Decision::Apply
        );
    }

    #[test]
    fn drift_heals_only_with_self_heal() {
        let prev = AppStatus {
            synced_revision: Some("r2".into()),
            synced_digest: Some("d2".into()),
            ..Default::default()
        };
        let p = plan(Action::Update);
        assert!(
            matches!(go(&p, &auto(), &prev, &[], &Trigger::Automatic, None), Decision::OutOfSync(m) if m.starts_with("drift"))
        );
        let heal = SyncPolicy {
            self_heal: true,
            ..auto()
        };
        assert_eq!(
            go(&p, &heal, &prev, &[], &Trigger::Automatic, None),
            Decision::Apply
        );
    }

    #[test]
    fn deny_window_waits_unless_overridden() {
        let ws = parse_all(&[SyncWindow {
            kind: WindowKind::Deny,
            schedule: "0 22 * * *".into(),
            duration: "8h".into(),
            time_zone: None,
        }])
        .unwrap();
        let prev = AppStatus::default();
        let p = plan(Action::Update);
        assert_eq!(
            go(&p, &auto(), &prev, &ws, &Trigger::Automatic, None),
            Decision::Waiting("sync window closed; next opening at 2026-12-01T06:00:00Z".into())
        );
        assert!(matches!(
            go(
                &p,
                &auto(),
                &prev,
                &ws,
                &Trigger::Manual {
                    override_windows: false
                },
                None
            ),
            Decision::Waiting(_)
        ));
        assert_eq!(
            go(
                &p,
                &auto(),
                &prev,
                &ws,
                &Trigger::Manual {
                    override_windows: true
                },
                None
            ),
            Decision::Apply
        );
    }
}
