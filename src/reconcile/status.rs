//! Status: the App status after a pass, with kstatus-style conditions (`Ready`, `Reconciling`,
//! `Stalled`) whose transition times only move when their status changes. Pure.

use jiff::Timestamp;

use super::plan::Plan;
use crate::app::{AppStatus, Condition, HealthState, Phase};
use crate::object::ObjectRef;
use crate::object::owner::Claim;
use crate::time::rfc3339;

fn set_condition(
    conditions: &mut Vec<Condition>,
    type_: &str,
    on: bool,
    reason: &str,
    message: &str,
    now: &str,
) {
    let status = if on { "True" } else { "False" };
    let time = conditions
        .iter()
        .find(|c| c.type_ == type_ && c.status == status)
        .map(|c| c.last_transition_time.clone())
        .unwrap_or_else(|| now.to_string());
    conditions.retain(|c| c.type_ != type_);
    conditions.push(Condition {
        type_: type_.to_string(),
        status: status.to_string(),
        reason: reason.to_string(),
        message: message.to_string(),
        last_transition_time: time,
    });
}

/// Sets phase, message and the three conditions consistently.
pub fn set_phase(status: &mut AppStatus, phase: Phase, message: &str, now: Timestamp) {
    let now = rfc3339(now);
    let reason = format!("{phase:?}");
    status.phase = Some(phase);
    status.message = (!message.is_empty()).then(|| message.to_string());
    let mut conditions = std::mem::take(&mut status.conditions);
    set_condition(
        &mut conditions,
        "Ready",
        phase == Phase::Synced,
        &reason,
        message,
        &now,
    );
    set_condition(
        &mut conditions,
        "Reconciling",
        phase == Phase::Progressing,
        &reason,
        message,
        &now,
    );
    set_condition(
        &mut conditions,
        "Stalled",
        matches!(phase, Phase::Degraded | Phase::Failed),
        &reason,
        message,
        &now,
    );
    status.conditions = conditions;
}

/// The status for a plan that was not applied (Synced no-op, Held, Waiting, OutOfSync): the
/// plan's revision, digest, summary and hash; `held_at` kept while the same plan stays Held.
pub fn planned(
    previous: &AppStatus,
    plan: &Plan,
    phase: Phase,
    message: &str,
    now: Timestamp,
) -> AppStatus {
    let mut s = previous.clone();
    s.revision = Some(plan.revision.clone());
    s.rendered_digest = Some(plan.rendered_digest.clone());
    s.plan = Some(plan.summary());
    let same_held = previous.phase == Some(Phase::Held)
        && previous.plan_hash.as_deref() == Some(plan.plan_hash.as_str());
    s.held_at = match phase {
        Phase::Held if same_held => previous.held_at.clone(),
        Phase::Held => Some(rfc3339(now)),
        _ => None,
    };
    s.plan_hash = Some(plan.plan_hash.clone());
    if phase == Phase::Synced {
        s.synced_revision = Some(plan.revision.clone());
        s.synced_digest = Some(plan.rendered_digest.clone());
        s.health.get_or_insert(HealthState::Healthy);
    }
    set_phase(&mut s, phase, message, now);
    set_out_of_scope(&mut s, plan, now);
    s
}

/// The condition naming inventory objects that prune leaves alone because today's allowlist
/// does not allow them.
pub const OUT_OF_SCOPE: &str = "OutOfScope";

/// Sets `OutOfScope=True` naming the plan's out-of-scope objects, or removes the condition
/// when there are none.
fn set_out_of_scope(status: &mut AppStatus, plan: &Plan, now: Timestamp) {
    if plan.out_of_scope.is_empty() {
        status.conditions.retain(|c| c.type_ != OUT_OF_SCOPE);
        return;
    }
    let names: Vec<String> = plan.out_of_scope.iter().map(ToString::to_string).collect();
    let message = format!(
        "kept in the inventory, not pruned: outside the cluster's allowlist now: {}",
        names.join(", ")
    );
    set_condition(
        &mut status.conditions,
        OUT_OF_SCOPE,
        true,
        "OutsideAllowlist",
        &message,
        &rfc3339(now),
    );
}

/// The status after an apply: the new inventory, the health outcome (Synced when healthy,
/// Degraded otherwise, Progressing while waiting).
pub fn applied(
    previous: &AppStatus,
    plan: &Plan,
    inventory: Vec<ObjectRef>,
    health: HealthState,
    message: &str,
    now: Timestamp,
) -> AppStatus {
    let mut s = previous.clone();
    s.revision = Some(plan.revision.clone());
    s.rendered_digest = Some(plan.rendered_digest.clone());
    s.synced_revision = Some(plan.revision.clone());
    s.synced_digest = Some(plan.rendered_digest.clone());
    s.plan = Some(plan.summary());
    s.plan_hash = Some(plan.plan_hash.clone());
    s.held_at = None;
    s.inventory = inventory;
    s.health = Some(health);
    s.last_synced_at = Some(rfc3339(now));
    let phase = match health {
        HealthState::Healthy => Phase::Synced,
        HealthState::Progressing => Phase::Progressing,
        HealthState::Degraded => Phase::Degraded,
    };
    set_phase(&mut s, phase, message, now);
    set_out_of_scope(&mut s, plan, now);
    s
}

/// The status after a failed pass: phase Failed with the error; everything else kept.
pub fn failed(previous: &AppStatus, error: &str, now: Timestamp) -> AppStatus {
    let mut s = previous.clone();
    set_phase(&mut s, Phase::Failed, error, now);
    s
}

/// The status after a pass of `revision` failed (rendered as `digest`; `None` when the render
/// itself failed): [`failed`], naming the revision that failed, so the phase, the message and
/// notifications speak of the same commit; the synced revision and the inventory are kept.
pub fn failed_at(
    previous: &AppStatus,
    revision: &str,
    digest: Option<&str>,
    error: &str,
    now: Timestamp,
) -> AppStatus {
    let mut s = failed(previous, error, now);
    s.revision = Some(revision.to_string());
    s.rendered_digest = digest.map(str::to_string);
    s
}

/// The condition naming rendered objects owned by another App, which the App left untouched.
pub const SHARED_RESOURCE: &str = "SharedResource";

/// The condition recording the last takeover of objects from another App (`syncPolicy.adopt`).
pub const ADOPTED: &str = "Adopted";

/// Marks the rendered objects `shared` that another App owns and this pass left untouched: a
/// `SharedResource=True` condition naming each object and its owner, and phase Degraded
/// instead of Synced (the App is not deployed as rendered, and approving a plan cannot change
/// that); Held, Waiting, OutOfSync and Failed keep their phase, with the conflict added to
/// the message. The revision is not synced (no synced revision is recorded), so the pass that
/// can apply the object (its owner gave it up, or `adopt` was set) applies it. Without shared
/// objects the condition is removed.
pub fn mark_shared(status: &mut AppStatus, shared: &[Claim], now: Timestamp) {
    if shared.is_empty() {
        status.conditions.retain(|c| c.type_ != SHARED_RESOURCE);
        return;
    }
    status.synced_revision = None;
    status.synced_digest = None;
    let names: Vec<String> = shared.iter().map(Claim::to_string).collect();
    let message = format!(
        "{SHARED_RESOURCE}: {} (left untouched; set syncPolicy.adopt to take over)",
        names.join("; ")
    );
    let phase = status.phase.unwrap_or(Phase::Degraded);
    if matches!(phase, Phase::Synced | Phase::Degraded | Phase::Progressing) {
        let combined = match status.message.as_deref() {
            Some(m) if phase != Phase::Synced && !m.is_empty() => format!("{m}; {message}"),
            _ => message.clone(),
        };
        set_phase(status, Phase::Degraded, &combined, now);
    } else {
        status.message = Some(match status.message.as_deref() {
            Some(m) if !m.is_empty() => format!("{m}; {message}"),
            _ => message.clone(),
        });
    }
    set_condition(
        &mut status.conditions,
        SHARED_RESOURCE,
        true,
        "OwnedByAnotherApp",
        &message,
        &rfc3339(now),
    );
}

/// Records that this pass took `adopted` over from other Apps: an `Adopted=True` condition
/// naming each object and its previous owner (kept until the next takeover).
pub fn mark_adopted(status: &mut AppStatus, adopted: &[Claim], now: Timestamp) {
    if adopted.is_empty() {
        return;
    }
    let names: Vec<String> = adopted
        .iter()
        .map(|c| format!("{} from App {}", c.object, c.owner))
        .collect();
    let message = format!("took over {}", names.join("; "));
    // A new takeover is a new transition, even if the condition was already True.
    status.conditions.retain(|c| c.type_ != ADOPTED);
    set_condition(
        &mut status.conditions,
        ADOPTED,
        true,
        "AdoptedFromAnotherApp",
        &message,
        &rfc3339(now),
    );
}

/// The condition recording whether the App's source fetches (set by the runner).
pub const SOURCE_READY: &str = "SourceReady";

/// The status after the App's source failed with `reason` (e.g. `AuthenticationFailed`): a
/// `SourceReady=False` condition and the message `source: MESSAGE`; the phase is kept when the
/// App has a revision already (it keeps running it), and is Failed when it never had one.
pub fn source_failed(
    previous: &AppStatus,
    reason: &str,
    message: &str,
    now: Timestamp,
) -> AppStatus {
    let message = format!("source: {message}");
    let mut s = previous.clone();
    if previous.revision.is_none() {
        set_phase(&mut s, Phase::Failed, &message, now);
    } else {
        s.message = Some(message.clone());
    }
    set_condition(
        &mut s.conditions,
        SOURCE_READY,
        false,
        reason,
        &message,
        &rfc3339(now),
    );
    s
}

/// The status once the source fetches again: `SourceReady=True`, and the source's failure
/// message cleared if it is still the App's message. `None` when the source was not failing.
pub fn source_recovered(previous: &AppStatus, now: Timestamp) -> Option<AppStatus> {
    let failing = previous
        .conditions
        .iter()
        .find(|c| c.type_ == SOURCE_READY && c.status == "False")?;
    let mut s = previous.clone();
    if s.message.as_deref() == Some(failing.message.as_str()) {
        s.message = None;
    }
    set_condition(
        &mut s.conditions,
        SOURCE_READY,
        true,
        "Fetched",
        "",
        &rfc3339(now),
    );
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn conditions_follow_the_phase_and_keep_transition_times() {
        let mut s = AppStatus::default();
        set_phase(&mut s, Phase::Progressing, "", t("2026-01-01T00:00:00Z"));
        let get = |s: &AppStatus, ty: &str| {
            s.conditions
                .iter()
                .find(|c| c.type_ == ty)
                .cloned()
                .unwrap()
        };
        assert_eq!(get(&s, "Reconciling").status, "True");
        assert_eq!(get(&s, "Ready").status, "False");
        set_phase(
            &mut s,
            Phase::Degraded,
            "timeout",
            t("2026-01-01T00:05:00Z"),
        );
        assert_eq!(get(&s, "Stalled").status, "True");
        assert_eq!(
            get(&s, "Ready").last_transition_time,
            "2026-01-01T00:00:00Z",
            "still False"
        );
        assert_eq!(
            get(&s, "Stalled").last_transition_time,
            "2026-01-01T00:05:00Z"
        );
        assert_eq!(s.message.as_deref(), Some("timeout"));
        set_phase(&mut s, Phase::Synced, "", t("2026-01-01T00:06:00Z"));
        assert_eq!(get(&s, "Ready").status, "True");
        assert_eq!(s.message, None);
        assert_eq!(s.conditions.len(), 3);
    }

    #[test]
    fn held_at_is_kept_for_the_same_plan() {
        let p = Plan::new("ns/app", "c", "r".into(), "d".into(), vec![], vec![]);
        let s1 = planned(
            &AppStatus::default(),
            &p,
            Phase::Held,
            "wait",
            t("2026-01-01T00:00:00Z"),
        );
        assert_eq!(s1.held_at.as_deref(), Some("2026-01-01T00:00:00Z"));
        let s2 = planned(&s1, &p, Phase::Held, "wait", t("2026-01-01T01:00:00Z"));
        assert_eq!(s2.held_at, s1.held_at);
        let p2 = Plan::new("ns/app", "c", "r2".into(), "d".into(), vec![], vec![]);
        let s3 = planned(&s2, &p2, Phase::Held, "wait", t("2026-01-01T02:00:00Z"));
        assert_eq!(s3.held_at.as_deref(), Some("2026-01-01T02:00:00Z"));
    }

    #[test]
    fn source_failures_set_source_ready_and_keep_a_synced_phase() {
        let now = t("2026-01-01T00:00:00Z");
        let never = source_failed(
            &AppStatus::default(),
            "AuthenticationFailed",
            "https://h/o/r: authentication failed",
            now,
        );
        assert_eq!(never.phase, Some(Phase::Failed));
        assert_eq!(
            never.message.as_deref(),
            Some("source: https://h/o/r: authentication failed")
        );
        let cond = never
            .conditions
            .iter()
            .find(|c| c.type_ == SOURCE_READY)
            .unwrap();
        assert_eq!(
            (cond.status.as_str(), cond.reason.as_str()),
            ("False", "AuthenticationFailed")
        );

        let mut synced = AppStatus {
            revision: Some("abc".into()),
            ..AppStatus::default()
        };
        set_phase(&mut synced, Phase::Synced, "", now);
        let failing = source_failed(&synced, "Unreachable", "down", now);
        assert_eq!(failing.phase, Some(Phase::Synced), "phase kept");
        assert_eq!(failing.message.as_deref(), Some("source: down"));
        let back = source_recovered(&failing, now).unwrap();
        assert_eq!(back.message, None);
        assert!(
            back.conditions
                .iter()
                .any(|c| c.type_ == SOURCE_READY && c.status == "True")
        );
        assert!(source_recovered(&back, now).is_none());
    }
}
