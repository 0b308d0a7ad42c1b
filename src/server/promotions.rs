//! The promotion API: promote what one App runs onto another (`…/promote?to=`), list an
//! App's promotions (`…/promotions`), roll back to an earlier one (`…/rollback?to=ID`) and
//! remove the pins (`…/unpin`). Each promotion and rollback is a record in the store (inserted
//! before the target's pass, finished with its outcome) and every call is audited with the
//! digests it pinned.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::{Value, json};

use super::AppState;
use super::apps::{AppAt, completed, key};
use super::auth::Actor;
use super::error::ApiError;
use crate::app::AppStatus;
use crate::app::promotion::{PinnedImage, PromotedFrom};
use crate::daemon::runner::{Completed, FindError, Operation, OperationError};
use crate::store::promotions::PromotionRecord;
use crate::time::now_rfc3339;

/// A promotion record as the API shows it.
type Record = PromotionRecord<Vec<PinnedImage>>;

/// Query of `POST …/promote`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromoteQuery {
    /// The target App: `NAME` (on any cluster) or `CLUSTER/NAME`.
    pub to: String,
    /// The source App's own namespace, when its name is ambiguous.
    pub namespace: Option<String>,
    /// The target App's own namespace, when its name is ambiguous.
    pub to_namespace: Option<String>,
}

/// Query of `POST …/rollback`.
#[derive(Debug, Deserialize)]
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

/// `CLUSTER/NAME` of App `key`, as the API addresses it.
fn address(state: &AppState, key: &str) -> String {
    state
        .runner()
        .app(key)
        .map(|app| {
            format!(
                "{}/{}",
                app.spec.destination.cluster_segment(),
                app.metadata.name.unwrap_or_default()
            )
        })
        .unwrap_or_else(|| key.to_string())
}

/// The key of the target App `to` (`NAME` or `CLUSTER/NAME`): 404 when there is none, 409
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

/// `digest=…` words for the audit log.
fn pinned_words(images: &[PinnedImage]) -> String {
    images
        .iter()
        .map(PinnedImage::pinned)
        .collect::<Vec<_>>()
        .join(",")
}

/// Inserts `record`, runs `operation(id)` on App `target_key`, finishes the record with the
/// outcome and audits it as `action`. Answers the record, the App's status and the summary
/// of what was pinned.
async fn pin_and_record(
    state: &AppState,
    actor: &Actor,
    action: &str,
    target_key: &str,
    mut record: Record,
    operation: impl FnOnce(i64) -> Operation,
) -> Result<Json<Value>, ApiError> {
    let store = state.store();
    record.id = store.insert_promotion(&record).await?;
    let result = state
        .runner()
        .operate(target_key, operation(record.id))
        .await;
    let status: Result<AppStatus, OperationError> = result.and_then(|done| match done {
        Completed::Status(status) => Ok(status),
        Completed::Plan(_) => Err(OperationError::Task("a promotion answered a plan".into())),
    });
    match &status {
        Ok(status) => {
            if let Some(promoted) = &status.promoted_from {
                record.revision = promoted.revision.clone();
                record.images = promoted.images.clone();
            }
            record.plan_hash = status.plan_hash.clone().unwrap_or_default();
            record.outcome = status
                .phase
                .map(|p| format!("{p:?}"))
                .unwrap_or_else(|| "unknown".into());
        }
        Err(e) => record.outcome = format!("refused: {e}"),
    }
    let finished = store.finish_promotion(&record).await;
    let audit = format!(
        "{} id={} from={} revision={} images={}",
        if status.is_ok() { "success" } else { "refused" },
        record.id,
        record.source,
        record.revision,
        pinned_words(&record.images),
    );
    let audit = match &status {
        Ok(_) => format!("{audit} outcome={}", record.outcome),
        Err(e) => format!("{audit}: {e}"),
    };
    store
        .record_audit(&actor.0, action, &record.target, &audit, &now_rfc3339())
        .await;
    let status = status?;
    finished?;
    let text = status
        .promoted_from
        .as_ref()
        .map(|p| {
            let mut lines = vec![p.headline()];
            lines.extend(p.image_lines().into_iter().map(|l| format!("  {l}")));
            lines.join("\n") + "\n"
        })
        .unwrap_or_default();
    Ok(Json(json!({
        "promotion": view(&record),
        "status": status,
        "text": text,
    })))
}

/// `POST /api/v1/apps/{cluster}/{name}/promote?to=TARGET`: pins the digests App
/// `cluster/name` runs on App `TARGET` and runs TARGET's pass (Held when it requires
/// approval). 409 when the source is not Synced and Healthy, 422 for a mixed rollout, an
/// image no Pod reports, or a target that renders none of the images. Audited as
/// `app.promote` with the digests.
pub async fn promote(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
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
    let record = Record {
        id: 0,
        target: address(&state, &target),
        target_key: target.clone(),
        source: format!("{cluster}/{name}"),
        revision: String::new(),
        images: Vec::new(),
        actor: actor.0.clone(),
        created_at: now_rfc3339(),
        plan_hash: String::new(),
        outcome: "pending".into(),
    };
    pin_and_record(&state, &actor, "app.promote", &target, record, |id| {
        Operation::Promote {
            source,
            id: id.to_string(),
        }
    })
    .await
}

/// `POST /api/v1/apps/{cluster}/{name}/rollback?to=ID`: pins the images of the App's earlier
/// promotion `ID` again (a new record) and runs its pass (Held when it requires approval).
/// Audited as `app.rollback` with the digests.
pub async fn rollback(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path((cluster, name)): Path<(String, String)>,
    Query(query): Query<RollbackQuery>,
) -> Result<Json<Value>, ApiError> {
    let at = AppAt {
        namespace: query.namespace.clone(),
    };
    let target = key(&state, &cluster, &name, &at)?;
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
    let promoted = PromotedFrom {
        app: source_app.to_string(),
        cluster: source_cluster.to_string(),
        revision: earlier.revision.clone(),
        images: earlier.images.clone(),
        promotion: None,
    };
    let record = Record {
        id: 0,
        target: format!("{cluster}/{name}"),
        target_key: target.clone(),
        source: earlier.source.clone(),
        revision: earlier.revision.clone(),
        images: earlier.images.clone(),
        actor: actor.0.clone(),
        created_at: now_rfc3339(),
        plan_hash: String::new(),
        outcome: "pending".into(),
    };
    pin_and_record(&state, &actor, "app.rollback", &target, record, |id| {
        Operation::Pin(Some(Box::new(PromotedFrom {
            promotion: Some(id.to_string()),
            ..promoted
        })))
    })
    .await
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
    Ok(Json(json!({
        "promotions": records.iter().map(view).collect::<Vec<_>>(),
        "promotedFrom": state.runner().status(&target).and_then(|s| s.promoted_from),
    })))
}

/// `POST /api/v1/apps/{cluster}/{name}/unpin`: removes the pins of the last promotion, so the
/// App runs the images its source renders, and runs its pass. Audited as `app.unpin`.
pub async fn unpin(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path((cluster, name)): Path<(String, String)>,
    Query(at): Query<AppAt>,
) -> Result<Json<Value>, ApiError> {
    let target = key(&state, &cluster, &name, &at)?;
    let pinned = state
        .runner()
        .status(&target)
        .and_then(|s| s.promoted_from)
        .map(|p| pinned_words(&p.images))
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
            &format!("{cluster}/{name}"),
            &outcome,
            &now_rfc3339(),
        )
        .await;
    Ok(Json(completed(result?)))
}
