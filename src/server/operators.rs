//! The routes operators report to (internal token only), so a `--role server` process lists
//! their Apps and hands them the operations people ask for: each operator's Apps
//! (`PUT /internal/operators/{operator}/apps`), their statuses (`PUT|DELETE
//! /internal/app-status`, read back a page at a time with `GET`), and the handed-over
//! operations it reads, claims and answers (`/internal/app-requests`), all of access
//! [`super::Access::Operators`]. The operator's side is `crate::daemon::runner`'s report.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, Query, Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::Response;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use super::AppState;
use super::error::ApiError;
use crate::app::AppStatus;
use crate::app::key::app_key;
use crate::daemon::runner::server_requests::{
    Claim, Claimed, Finished, OpenRequests, is_request_id, open_requests,
};
use crate::daemon::runner::{
    AUTO_PROMOTE_ACTOR, FindError, FinishedPromotion, Heartbeat, MAX_STATUSES_PER_PAGE,
    NewPromotion, Promotion, RemovedApp, ReportedApp, ReportedAppQuery, ReportedApps,
    ReportedStatus, StatusesQuery, StoredStatus, StoredStatuses, is_report_digest, report_digest,
};
use crate::store::apps::AppStatusRecord;
use crate::time::now_rfc3339;

/// The largest body of these routes: ten thousand Apps reported at once, a diff of a
/// five-thousand-object App.
pub const MAX_BODY: usize = 64 * 1024 * 1024;
/// The longest operator id (a Pod name is at most 253 characters).
const MAX_OPERATOR_CHARS: usize = 253;

/// `body` as `T`, or a 400 naming what is wrong with it.
fn parse<T: DeserializeOwned>(body: &Bytes, what: &str) -> Result<T, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, format!("{what}: {e}")))
}

/// A 400 naming `field` and `reason`.
fn invalid(field: &str, reason: impl std::fmt::Display) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, format!("{field}: {reason}"))
}

/// The middleware of [`super::Access::Operators`]: refuses the operators' reports on a
/// process that reconciles Apps itself (`--role all`), whose statuses and operations would
/// mix with theirs.
pub async fn require_server_role(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    if state.reconciles_apps() {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "this wardn process reconciles Apps itself (--role all): operators report to a --role server process",
        ));
    }
    Ok(next.run(request).await)
}

/// Checks an operator id: a replica id (Pod name or host name and process id).
fn check_operator(operator: &str) -> Result<(), ApiError> {
    let valid = !operator.is_empty()
        && operator.chars().count() <= MAX_OPERATOR_CHARS
        && operator
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'));
    if valid {
        return Ok(());
    }
    Err(invalid(
        "operator",
        format!(
            "{:?} is not a replica id (1 to {MAX_OPERATOR_CHARS} letters, digits, '-', '.' or '_')",
            operator.chars().take(80).collect::<String>()
        ),
    ))
}

/// `PUT /internal/operators/{operator}/apps`: operator `operator` reconciles exactly these
/// Apps now. Each must have a name and a valid source, and no key twice; the Apps it no
/// longer reports stop being listed. The body's [`report_digest`] is what its heartbeats name.
pub async fn report_apps(
    State(state): State<AppState>,
    Path(operator): Path<String>,
    body: Bytes,
) -> Result<StatusCode, ApiError> {
    check_operator(&operator)?;
    let report: ReportedApps = parse(&body, "body")?;
    let mut rows: Vec<(String, String)> = Vec::with_capacity(report.apps.len());
    let mut keys = std::collections::BTreeSet::new();
    for (index, reported) in report.apps.into_iter().enumerate() {
        let field = format!("apps[{index}]");
        let text = serde_json::to_string(&reported).map_err(|e| ApiError::internal(&e))?;
        let app = reported.into_app();
        if app.metadata.name.as_deref().is_none_or(str::is_empty) {
            return Err(invalid(&format!("{field}.app.metadata.name"), "required"));
        }
        let key = app_key(&app);
        app.spec
            .source
            .validate()
            .map_err(|e| invalid(&format!("{field} ({key})"), e))?;
        if !keys.insert(key.clone()) {
            return Err(invalid(&field, format!("App {key} is reported twice")));
        }
        rows.push((key, text));
    }
    let now = jiff::Timestamp::now().as_millisecond();
    state
        .store()
        .report_operator_apps(&operator, &report_digest(&body), &rows, now)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `PUT /internal/operators/{operator}/heartbeat`: operator `operator` is alive and still
/// reconciles the Apps of its report of that digest. A 409 when the server holds another
/// report of it, or none (lost, expired, or never sent): the operator sends its Apps again.
pub async fn heartbeat(
    State(state): State<AppState>,
    Path(operator): Path<String>,
    body: Bytes,
) -> Result<StatusCode, ApiError> {
    check_operator(&operator)?;
    let heartbeat: Heartbeat = parse(&body, "body")?;
    if !is_report_digest(&heartbeat.digest) {
        return Err(invalid(
            "digest",
            "expected the SHA-256 of the last report, 64 lowercase hexadecimal digits",
        ));
    }
    let now = jiff::Timestamp::now().as_millisecond();
    if state
        .store()
        .operator_heartbeat(&operator, &heartbeat.digest, now)
        .await?
    {
        return Ok(StatusCode::NO_CONTENT);
    }
    Err(ApiError::new(
        StatusCode::CONFLICT,
        format!(
            "operator {operator}: the server holds no report of digest {}: send the Apps again",
            heartbeat.digest
        ),
    ))
}

/// `PUT /internal/app-status`: an operator's App has a new status.
pub async fn put_status(
    State(state): State<AppState>,
    body: Bytes,
) -> Result<StatusCode, ApiError> {
    let reported: ReportedStatus = parse(&body, "body")?;
    check_key(&reported.key)?;
    if reported.cluster.is_empty() {
        return Err(invalid("cluster", "required"));
    }
    serde_json::from_str::<AppStatus>(reported.status.get())
        .map_err(|e| invalid("status", format!("not an App status: {e}")))?;
    let record = AppStatusRecord {
        key: reported.key,
        cluster: reported.cluster,
        name: reported.name,
        status: reported.status,
        updated_at: now_rfc3339(),
    };
    state.store().put_app_status(&record).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /internal/app-status[?cluster=&after=&limit=]`: a page of the stored statuses in key
/// order, for an operator that takes clusters over or restarts; `?key=`: one App's, for a
/// sharded operator reading the status of an App another operator reconciles (a promotion's
/// source).
pub async fn statuses(
    State(state): State<AppState>,
    Query(query): Query<StatusesQuery>,
) -> Result<Json<StoredStatuses>, ApiError> {
    if let Some(key) = &query.key {
        check_key(key)?;
        if query.cluster.is_some() || query.after.is_some() || query.limit.is_some() {
            return Err(invalid(
                "key",
                "reads one status: no cluster, after or limit with it",
            ));
        }
        let stored = state.store().app_status::<Box<RawValue>>(key).await?;
        let statuses = stored.into_iter().map(stored_status).collect();
        return Ok(Json(StoredStatuses {
            statuses,
            next: None,
        }));
    }
    let limit = query.limit.unwrap_or(MAX_STATUSES_PER_PAGE);
    if limit == 0 || limit > MAX_STATUSES_PER_PAGE {
        return Err(invalid(
            "limit",
            format!("must be 1 to {MAX_STATUSES_PER_PAGE}"),
        ));
    }
    let page = state
        .store()
        .app_statuses_page::<Box<RawValue>>(
            query.cluster.as_deref(),
            query.after.as_deref().unwrap_or_default(),
            i64::from(limit),
        )
        .await?;
    let next = (page.len() == limit as usize)
        .then(|| page.last().map(|record| record.key.clone()))
        .flatten();
    let statuses = page.into_iter().map(stored_status).collect();
    Ok(Json(StoredStatuses { statuses, next }))
}

/// `GET /internal/reported-apps?key=` (or `?name=[&cluster=]`): an App as the operator that
/// reconciles it reported it, for another operator promoting from it; a 404 naming the App
/// when no live operator reports it, a 409 naming them when the name finds several.
pub async fn reported_app(
    State(state): State<AppState>,
    Query(query): Query<ReportedAppQuery>,
) -> Result<Json<ReportedApp>, ApiError> {
    let runner = state.runner();
    let key = match (&query.key, &query.name) {
        (Some(key), None) if query.cluster.is_none() => {
            check_key(key)?;
            key.clone()
        }
        (None, Some(name)) if !name.is_empty() => {
            let cluster = query.cluster.as_deref();
            runner.find(cluster, name, None).map_err(|e| match e {
                FindError::NotFound => ApiError::new(
                    StatusCode::NOT_FOUND,
                    format!(
                        "no operator reports an App {name}{}",
                        cluster
                            .map(|c| format!(" on cluster {c}"))
                            .unwrap_or_default()
                    ),
                ),
                FindError::Ambiguous(keys) => ApiError::new(
                    StatusCode::CONFLICT,
                    format!("{name} names several Apps: {}", keys.join(", ")),
                ),
            })?
        }
        _ => {
            return Err(invalid("key", "give key, or name (and cluster), not both"));
        }
    };
    let app = runner.app(&key).ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            format!("App {key}: no operator reports it"),
        )
    })?;
    Ok(Json(ReportedApp::of(&app)))
}

/// `POST /internal/promotions`: stores the pending record of an automatic promotion an
/// operator performs, under the server's name of its target; answers its id.
pub async fn record_promotion(
    State(state): State<AppState>,
    body: Bytes,
) -> Result<Json<NewPromotion>, ApiError> {
    let mut record: Promotion = parse(&body, "body")?;
    record.target = automatic_target(&state, &record)?;
    if record.outcome != "pending" {
        return Err(invalid("outcome", "a new promotion record is pending"));
    }
    let id = state.store().insert_promotion(&record).await?;
    Ok(Json(NewPromotion { id }))
}

/// `PUT /internal/promotions/{id}`: finishes automatic promotion `id` with its outcome and
/// writes its audit entry (`app.promote`), once: a record that is not that operator's
/// pending automatic promotion of the App is a 409.
pub async fn finish_promotion(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    body: Bytes,
) -> Result<StatusCode, ApiError> {
    let finished: FinishedPromotion = parse(&body, "body")?;
    let mut record = finished.record;
    if record.id != id {
        return Err(invalid(
            "record.id",
            format!("{} is not the promotion of the path, {id}", record.id),
        ));
    }
    record.target = automatic_target(&state, &record)?;
    if record.outcome == "pending" {
        return Err(invalid(
            "record.outcome",
            "a finished promotion has an outcome",
        ));
    }
    let stored: Promotion = state
        .store()
        .promotion(id)
        .await?
        .ok_or_else(|| ApiError::new(StatusCode::NOT_FOUND, format!("no promotion {id}")))?;
    if stored.actor != AUTO_PROMOTE_ACTOR || stored.target_key != record.target_key {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            format!(
                "promotion {id} is not an automatic promotion of App {}",
                record.target_key
            ),
        ));
    }
    if stored.outcome != "pending" {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            format!("promotion {id} is finished already ({})", stored.outcome),
        ));
    }
    state.store().finish_promotion(&record).await?;
    state
        .store()
        .record_audit(
            AUTO_PROMOTE_ACTOR,
            "app.promote",
            &record.target,
            &finished.audit,
            &now_rfc3339(),
        )
        .await;
    Ok(StatusCode::NO_CONTENT)
}

/// The API's name (`cluster/name`) of the target of `record`, an automatic promotion an
/// operator performs: its actor must be [`AUTO_PROMOTE_ACTOR`] (the only promotions an
/// operator performs on its own) and its target an App key. The server's name of the App when
/// it lists it; the operator's otherwise (an App promoted just after it appeared, before the
/// server took the operator's report of it).
fn automatic_target(state: &AppState, record: &Promotion) -> Result<String, ApiError> {
    if record.actor != AUTO_PROMOTE_ACTOR {
        return Err(invalid(
            "actor",
            format!("operators record only automatic promotions ({AUTO_PROMOTE_ACTOR})"),
        ));
    }
    check_key(&record.target_key)?;
    Ok(match state.runner().app(&record.target_key) {
        Some(_) => state.runner().address(&record.target_key),
        None => record.target.clone(),
    })
}

/// A stored status as the operators read it back.
fn stored_status(record: AppStatusRecord<Box<RawValue>>) -> StoredStatus {
    StoredStatus {
        key: record.key,
        status: record.status,
    }
}

/// `DELETE /internal/app-status`: an operator no longer manages the App.
pub async fn delete_status(
    State(state): State<AppState>,
    body: Bytes,
) -> Result<StatusCode, ApiError> {
    let removed: RemovedApp = parse(&body, "body")?;
    check_key(&removed.key)?;
    state.store().delete_app_status(&removed.key).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Checks an App key: `namespace/name` (a target's `namespace/name:target`).
fn check_key(key: &str) -> Result<(), ApiError> {
    match key.split_once('/') {
        Some((namespace, name))
            if !namespace.is_empty() && !name.is_empty() && key.len() <= 1024 =>
        {
            Ok(())
        }
        _ => Err(invalid("key", "expected namespace/name")),
    }
}

/// `GET /internal/app-requests`: the operations no operator claimed yet, oldest first.
pub async fn requests(State(state): State<AppState>) -> Result<Json<OpenRequests>, ApiError> {
    open_requests(state.store())
        .await
        .map(Json)
        .map_err(|e| ApiError::new(StatusCode::SERVICE_UNAVAILABLE, e))
}

/// The request `id` names, or a 404 (also for anything that is not a request id).
async fn stored_request(
    state: &AppState,
    id: &str,
) -> Result<crate::store::requests::AppRequest, ApiError> {
    let not_found = || ApiError::new(StatusCode::NOT_FOUND, format!("no request {id:?}"));
    if !is_request_id(id) {
        return Err(not_found());
    }
    state.store().app_request(id).await?.ok_or_else(not_found)
}

/// `POST /internal/app-requests/{id}/claim`: claims request `id` for the operator named in
/// the body; `{"claimed": false}` when another claimed it first.
pub async fn claim(
    State(state): State<AppState>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Json<Claimed>, ApiError> {
    stored_request(&state, &id).await?;
    let claim: Claim = parse(&body, "body")?;
    check_operator(&claim.replica).map_err(|_| invalid("replica", "not a replica id"))?;
    let claimed = state.store().claim_app_request(&id, &claim.replica).await?;
    Ok(Json(Claimed { claimed }))
}

/// `PUT /internal/app-requests/{id}/outcome`: the outcome of claimed request `id` (JSON).
/// A request nobody claimed, or one already answered, is a 409.
pub async fn finish(
    State(state): State<AppState>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<StatusCode, ApiError> {
    let request = stored_request(&state, &id).await?;
    let finished: Finished = parse(&body, "body")?;
    serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(&finished.outcome)
        .map_err(|e| invalid("outcome", format!("not a JSON object: {e}")))?;
    if request.claimed_by.is_none() {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            format!("request {id} is not claimed: claim it first"),
        ));
    }
    if request.outcome.is_some() {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            format!("request {id} is already answered"),
        ));
    }
    state
        .store()
        .finish_app_request(&id, &finished.outcome, &now_rfc3339())
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
