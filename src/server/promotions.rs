//! The promotion API: promote what one App runs onto another (`…/promote?to=`), list an
//! App's promotions (`…/promotions`), roll back to an earlier one (`…/rollback?to=ID`) and
//! remove the pins (`…/unpin`). Each promotion and rollback is recorded and audited by the
//! runner ([`crate::daemon::runner::Runner::promote_recorded`]); unpins are audited here.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::{Value, json};

use super::AppState;
use super::apps::{AppAt, completed, key, may_decide};
use super::auth::{Actor, Caller};
use super::error::ApiError;
use crate::app::AppStatus;
use crate::app::promotion::{PinnedImage, PromotedFrom};
use crate::daemon::runner::{FindError, Operation, PinRequest, Promotion};
use crate::time::now_rfc3339;

/// A promotion record.
type Record = Promotion;

/// Query of `POST …/promote`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PromoteQuery {
    /// The target App: `NAME` (on any cluster) or `CLUSTER/NAME`; `NAME:TARGET` names one
    /// target of an App with `spec.targets`.
    pub to: String,
    /// The source App's own namespace, when its name is ambiguous.
    pub namespace: Option<String>,
    /// The target App's own namespace, when its name is ambiguous.
    pub to_namespace: Option<String>,
}

/// Query of `POST …/rollback`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RollbackQuery {
    /// The id of the promotion whose images to pin again.
    pub to: i64,
    /// The App's own namespace, when its name is ambiguous.
    pub namespace: Option<String>,
}

fn view(record: &Record) -> Value {
    json!({
        "id": record.id,
        "source": record.source,
        "target": record.target,
        "revision": record.revision,
        "images": record.images,
        "actor": record.actor,
        "createdAt": record.created_at,
        "planHash": record.plan_hash,
        "outcome": record.outcome,
    })
}

/// The key of the target App `to` (`NAME` or `CLUSTER/NAME`, with `:TARGET` for a target): 404 when there is none, 409
/// naming the candidates when several match.
fn target_key(state: &AppState, to: &str, namespace: Option<&str>) -> Result<String, ApiError> {
    let (cluster, name) = match to.split_once('/') {
        Some((cluster, name)) => (Some(cluster), name),
        None => (None, to),
    };
    if name.is_empty() || cluster.is_some_and(str::is_empty) {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("to: {to:?} is not NAME or CLUSTER/NAME"),
        ));
    }
    super::apps::check_target(name)
        .map_err(|e| ApiError::new(e.status, format!("to: {}", e.message)))?;
    match state.runner().find(cluster, name, namespace) {
        Ok(key) => Ok(key),
        Err(FindError::NotFound) => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!("to: no App {to}"),
        )),
        Err(FindError::Ambiguous(keys)) => Err(ApiError::new(
            StatusCode::CONFLICT,
            format!(
                "to: {to} names several Apps ({}); name it as CLUSTER/NAME or add &to_namespace=",
                keys.join(", ")
            ),
        )),
    }
}

/// 403 unless `caller` may change what App `key` runs: an approver limited to named
/// clusters may promote, roll back and unpin only onto Apps on those clusters.
fn may_change(state: &AppState, caller: &Caller, key: &str) -> Result<(), ApiError> {
    match state.runner().app(key) {
        Some(app) => may_decide(caller, app.spec.destination.cluster_segment()),
        None => Ok(()),
    }
}

/// The answer of a promotion or rollback: the record, the target's status and the summary
/// of what was pinned.
fn answer(record: &Record, status: &AppStatus) -> Json<Value> {
    let text = status
        .promoted_from
        .as_ref()
        .map(|p| {
            let mut lines = vec![p.headline()];
            lines.extend(p.image_lines().into_iter().map(|l| format!("  {l}")));
            lines.join("\n") + "\n"
        })
        .unwrap_or_default();
    Json(json!({
        "promotion": view(record),
        "status": status,
        "text": text,
    }))
}

/// `POST /api/v1/apps/{cluster}/{name}/promote?to=TARGET`: pins the digests App
/// `cluster/name` runs on App `TARGET` and runs TARGET's pass (Held when it requires
/// approval). 409 when the source is not Synced and Healthy (or not for the target's
/// `spec.promotion.requireHealthyFor`; the answer says how long is left) or is not the
/// target's `spec.promotion.from`; 422 for a mixed rollout, an image no Pod reports, or a
/// target that renders none of the images. Recorded and audited as `app.promote` with the
/// digests.
pub async fn promote(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Extension(caller): Extension<Caller>,
    Path((cluster, name)): Path<(String, String)>,
    Query(query): Query<PromoteQuery>,
) -> Result<Json<Value>, ApiError> {
    let at = AppAt {
        namespace: query.namespace.clone(),
    };
    let source = key(&state, &cluster, &name, &at)?;
    let target = target_key(&state, &query.to, query.to_namespace.as_deref())?;
    if source == target {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("to: {} cannot be promoted onto itself", query.to),
        ));
    }
    may_change(&state, &caller, &target)?;
    let request = PinRequest::Promote { source };
    let (record, status) = state
        .runner()
        .promote_recorded(&actor.0, &target, request)
        .await?;
    Ok(answer(&record, &status))
}

/// `POST /api/v1/apps/{cluster}/{name}/rollback?to=ID`: pins the images of the App's earlier
/// promotion `ID` again (a new record) and runs its pass (Held when it requires approval).
/// Audited as `app.rollback` with the digests.
pub async fn rollback(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Extension(caller): Extension<Caller>,
    Path((cluster, name)): Path<(String, String)>,
    Query(query): Query<RollbackQuery>,
) -> Result<Json<Value>, ApiError> {
    let at = AppAt {
        namespace: query.namespace.clone(),
    };
    let target = key(&state, &cluster, &name, &at)?;
    may_change(&state, &caller, &target)?;
    let earlier: Record = state
        .store()
        .promotion(query.to)
        .await?
        .filter(|r: &Record| r.target_key == target)
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::NOT_FOUND,
                format!("to: App {cluster}/{name} has no promotion {}", query.to),
            )
        })?;
    if earlier.images.is_empty() {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            format!(
                "to: promotion {} pinned no images (its outcome: {})",
                earlier.id, earlier.outcome
            ),
        ));
    }
    let (source_cluster, source_app) = earlier
        .source
        .split_once('/')
        .unwrap_or(("", earlier.source.as_str()));
    let request = PinRequest::Rollback(PromotedFrom {
        app: source_app.to_string(),
        cluster: source_cluster.to_string(),
        revision: earlier.revision.clone(),
        images: earlier.images.clone(),
        promotion: None,
    });
    let (record, status) = state
        .runner()
        .promote_recorded(&actor.0, &target, request)
        .await?;
    Ok(answer(&record, &status))
}

/// `GET /api/v1/apps/{cluster}/{name}/promotions`: the App's promotions and rollbacks,
/// newest first.
pub async fn list(
    State(state): State<AppState>,
    Path((cluster, name)): Path<(String, String)>,
    Query(at): Query<AppAt>,
) -> Result<Json<Value>, ApiError> {
    let target = key(&state, &cluster, &name, &at)?;
    let records: Vec<Record> = state.store().promotions(&target).await?;
    let status = state.runner().current_status(&target).await?;
    Ok(Json(json!({
        "promotions": records.iter().map(view).collect::<Vec<_>>(),
        "promotedFrom": status.and_then(|s| s.promoted_from),
    })))
}

/// `POST /api/v1/apps/{cluster}/{name}/unpin`: removes the pins of the last promotion, so the
/// App runs the images its source renders, and runs its pass. Audited as `app.unpin`.
pub async fn unpin(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Extension(caller): Extension<Caller>,
    Path((cluster, name)): Path<(String, String)>,
    Query(at): Query<AppAt>,
) -> Result<Json<Value>, ApiError> {
    let target = key(&state, &cluster, &name, &at)?;
    may_change(&state, &caller, &target)?;
    let pinned = state
        .runner()
        .current_status(&target)
        .await?
        .and_then(|s| s.promoted_from)
        .map(|p| {
            let images: Vec<String> = p.images.iter().map(PinnedImage::pinned).collect();
            images.join(",")
        })
        .unwrap_or_default();
    let result = state.runner().operate(&target, Operation::Pin(None)).await;
    let outcome = match &result {
        Ok(_) => format!("success unpinned={pinned}"),
        Err(e) => format!("refused unpinned={pinned}: {e}"),
    };
    state
        .store()
        .record_audit(
            &actor.0,
            "app.unpin",
            &state.runner().address(&target),
            &outcome,
            &now_rfc3339(),
        )
        .await;
    Ok(Json(completed(result?)))
}
