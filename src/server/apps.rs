//! The Apps API: list and show the in-memory status of the Apps `wardn serve --apps` runs,
//! show a fresh plan, approve or reject a Held plan (audited), and ask for a manual sync
//! (audited; it may override a closed sync window when asked to explicitly), and list the
//! App's events (its audit entries) and the live health of its objects.
//! Apps are addressed as `{cluster}/{name}`, `local` being the management cluster, with
//! `?namespace=` (the App's own namespace) when the name alone is ambiguous; one target of an
//! App with `spec.targets` as `{cluster}/{name}:{target}` (the App's name alone finds its
//! target on that cluster, or its primary target).

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::AppState;
use super::auth::{Actor, Caller};
use super::error::ApiError;
use super::four_eyes;
use crate::app::{App, AppStatus, Phase};
use crate::daemon::runner::{Completed, FindError, Operation};
use crate::reconcile::decide::Trigger;
use crate::store::audit::PageQuery;
use crate::time::now_rfc3339;

/// Filters of `GET /api/v1/apps`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ListQuery {
    /// Only Apps deployed to this cluster segment (`local`: the management cluster).
    pub cluster: Option<String>,
    /// Only Apps in this phase (e.g. `Held`); another word is refused (400).
    pub phase: Option<Phase>,
}

/// Body of `POST …/approve` and `POST …/reject`: the plan the approver reviewed (optional).
/// Unknown fields are refused (400): a misspelt hash must not approve whatever is Held.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DecisionBody {
    /// The hash of the reviewed plan (`plan_hash`, or `planHash` as the App status spells
    /// it); the decision is refused (409) when another plan is Held.
    #[serde(alias = "planHash")]
    pub plan_hash: Option<String>,
}

/// Body of `POST …/sync` (optional).
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SyncBody {
    /// Sync even inside a closed sync window (audited with the actor). Without it, a sync
    /// in a closed window is refused with 409 naming the next opening.
    #[serde(default)]
    pub override_window: bool,
}

/// Decodes an optional JSON body: empty (or whitespace) is `T::default()`, malformed is 400.
fn optional_body<T: Default + DeserializeOwned>(body: &Bytes) -> Result<T, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    serde_json::from_slice(body)
        .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, format!("request body: {e}")))
}

/// The API's form of an App: its identity, destination, phase and status, and, on a
/// `--role server` process, the operator that reconciles it (`null` otherwise).
fn view(app: &App, status: &AppStatus, operator: Option<String>) -> Value {
    json!({
        "name": app.metadata.name,
        "namespace": app.metadata.namespace,
        "cluster": app.spec.destination.cluster_segment(),
        "target": app.spec.destination.target,
        "clusterTemplate": app.spec.destination.cluster_template,
        "destinationNamespace": app.spec.destination.namespace,
        "phase": status.phase,
        "status": status,
        "operator": operator,
    })
}

pub(super) fn completed(done: Completed) -> Value {
    match done {
        Completed::Status(status) => json!({ "status": status }),
        Completed::Plan(plan) => json!({ "plan": plan, "text": plan.text() }),
    }
}

/// `GET /api/v1/apps[?cluster=&phase=]`; `errors` lists the problems of the `--apps`
/// directory (invalid files keep their previous Apps running); `reconciles_apps` is false on a
/// `--role server` process, which lists the Apps its operators report. The body is written
/// App by App: each App is copied, its status parsed and its entry built only when the
/// filters keep it.
/// A fleet's statuses parsed and turned into JSON values at once raised the server's RSS by
/// 305 MiB per request at 10,000 Apps (a 17 MiB body); now the statuses' text and the body
/// itself are what a request holds (`benches/shards.rs`).
pub async fn list(
    State(state): State<AppState>,
    Query(query): Query<ListQuery>,
) -> Result<Response, ApiError> {
    let runner = state.runner();
    let statuses = runner.current_statuses().await?;
    let mut body = b"{\"apps\":[".to_vec();
    let mut first = true;
    for (key, cell) in statuses {
        // An App removed since its status was taken is left out.
        let Some(app) = runner.app(&key) else {
            continue;
        };
        if query
            .cluster
            .as_deref()
            .is_some_and(|c| app.spec.destination.cluster_segment() != c)
        {
            continue;
        }
        let status = cell.read(&key);
        if query.phase.is_some() && status.phase != query.phase {
            continue;
        }
        if !first {
            body.push(b',');
        }
        first = false;
        serde_json::to_writer(&mut body, &view(&app, &status, runner.operator_of(&key)))
            .map_err(|e| ApiError::internal(&e))?;
    }
    body.extend_from_slice(b"],\"errors\":");
    serde_json::to_writer(&mut body, &runner.file_errors()).map_err(|e| ApiError::internal(&e))?;
    body.extend_from_slice(match state.reconciles_apps() {
        true => b",\"reconciles_apps\":true}",
        false => b",\"reconciles_apps\":false}",
    });
    Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response())
}

/// `?namespace=` of the per-App routes: the App's own namespace, needed only when Apps of the
/// same name deploy to the same cluster from several namespaces.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
pub struct AppAt {
    /// The App resource's namespace.
    pub namespace: Option<String>,
}

/// The key of the App at `{cluster}/{name}` (in `at.namespace` when given): 404 when there
/// is none, 409 naming the candidates when the name is ambiguous.
pub(super) fn key(
    state: &AppState,
    cluster: &str,
    name: &str,
    at: &AppAt,
) -> Result<String, ApiError> {
    check_target(name)?;
    match state
        .runner()
        .find(Some(cluster), name, at.namespace.as_deref())
    {
        Ok(key) => Ok(key),
        Err(FindError::NotFound) => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            match &at.namespace {
                Some(ns) => format!("no App {cluster}/{name} in namespace {ns}"),
                None => format!("no App {cluster}/{name}"),
            },
        )),
        Err(FindError::Ambiguous(keys)) => Err(ApiError::new(
            StatusCode::CONFLICT,
            format!(
                "{cluster}/{name} names several Apps ({}); add ?namespace= or :TARGET to choose one",
                keys.join(", ")
            ),
        )),
    }
}

/// 400 unless the `:target` part of an addressed App name (if any) is a target's name (a DNS
/// label): `web:prod` is target `prod` of App `web`.
pub(super) fn check_target(name: &str) -> Result<(), ApiError> {
    match crate::app::key::split_name(name) {
        (_, Some(target)) if !crate::object::is_dns_label(target) => Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            format!(
                "{:?}: a target name (after ':') must be a DNS label",
                target.chars().take(100).collect::<String>()
            ),
        )),
        _ => Ok(()),
    }
}

/// `GET /api/v1/apps/{cluster}/{name}`.
pub async fn get(
    State(state): State<AppState>,
    Path((cluster, name)): Path<(String, String)>,
    Query(at): Query<AppAt>,
) -> Result<Json<Value>, ApiError> {
    let key = key(&state, &cluster, &name, &at)?;
    let runner = state.runner();
    let app = runner
        .app(&key)
        .ok_or_else(|| ApiError::new(StatusCode::NOT_FOUND, format!("no App {key}")))?;
    let status = runner.current_status(&key).await?.unwrap_or_default();
    Ok(Json(view(&app, &status, runner.operator_of(&key))))
}

/// `GET /api/v1/apps/{cluster}/{name}/diff`: a fresh plan, without deciding or applying.
pub async fn diff(
    State(state): State<AppState>,
    Path((cluster, name)): Path<(String, String)>,
    Query(at): Query<AppAt>,
) -> Result<Json<Value>, ApiError> {
    let key = key(&state, &cluster, &name, &at)?;
    let done = state.runner().operate(&key, Operation::Plan).await?;
    Ok(Json(completed(done)))
}

/// How many of an App's events `GET …/events` answers.
pub const EVENTS_LIMIT: i64 = 50;

/// `GET /api/v1/apps/{cluster}/{name}/events` → `{"events": [...]}`: the newest audit entries
/// about the App (syncs, refreshes, approvals, rejections, promotions, rollbacks, unpins),
/// newest first, at most [`EVENTS_LIMIT`]. Viewers read them here; the whole audit log is
/// the admins'.
pub async fn events(
    State(state): State<AppState>,
    Path((cluster, name)): Path<(String, String)>,
    Query(at): Query<AppAt>,
) -> Result<Json<Value>, ApiError> {
    let key = key(&state, &cluster, &name, &at)?;
    let query = PageQuery {
        limit: Some(EVENTS_LIMIT),
        target: Some(state.runner().address(&key)),
        ..PageQuery::default()
    };
    let mut entries = state.store().audit_page(&query).await?.entries;
    entries.reverse();
    let events: Vec<Value> = entries
        .into_iter()
        .map(|e| json!({"at": e.at, "actor": e.actor, "action": e.action, "outcome": e.outcome}))
        .collect();
    Ok(Json(json!({ "events": events })))
}

/// `GET /api/v1/apps/{cluster}/{name}/resources` → `{"resources": [{"object", "health",
/// "message"}]}`: each object the App manages (its inventory) with its health read from the
/// cluster now (`Healthy`, `Progressing`, `Degraded`, or `Missing`); 502 when the cluster
/// cannot be read.
pub async fn resources(
    State(state): State<AppState>,
    Path((cluster, name)): Path<(String, String)>,
    Query(at): Query<AppAt>,
) -> Result<Json<Value>, ApiError> {
    let key = key(&state, &cluster, &name, &at)?;
    let resources = state.runner().object_health(&key).await?;
    Ok(Json(json!({ "resources": resources })))
}

/// `POST /api/v1/apps/{cluster}/{name}/refresh`: a hard refresh. The App's source is fetched
/// now and an automatic pass dry-runs every object instead of trusting earlier passes; as any
/// automatic pass, it applies only when the sync policy is automated. Answers the App's
/// status after the pass; audited as `app.refresh`.
pub async fn refresh(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path((cluster, name)): Path<(String, String)>,
    Query(at): Query<AppAt>,
) -> Result<Json<Value>, ApiError> {
    let key = key(&state, &cluster, &name, &at)?;
    let result = state
        .runner()
        .operate(&key, Operation::Refresh)
        .await
        .map_err(ApiError::from);
    let outcome = pass_outcome(&result, "hard");
    let target = state.runner().address(&key);
    state
        .store()
        .record_audit(&actor.0, "app.refresh", &target, &outcome, &now_rfc3339())
        .await;
    Ok(Json(completed(result?)))
}

/// `POST /api/v1/apps/{cluster}/{name}/approve` with optional `{"plan_hash"}`; audited as
/// `app.approve` with the actor and the plan hash.
pub async fn approve(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Extension(caller): Extension<Caller>,
    Path((cluster, name)): Path<(String, String)>,
    Query(at): Query<AppAt>,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let decision = Decision {
        action: "app.approve",
        operation: Operation::Approve,
        four_eyes: true,
    };
    decide(
        &state,
        &actor,
        &caller,
        (&cluster, &name),
        &at,
        &body,
        decision,
    )
    .await
}

/// `POST /api/v1/apps/{cluster}/{name}/reject` with optional `{"plan_hash"}`; audited as
/// `app.reject` with the plan hash.
pub async fn reject(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Extension(caller): Extension<Caller>,
    Path((cluster, name)): Path<(String, String)>,
    Query(at): Query<AppAt>,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let decision = Decision {
        action: "app.reject",
        operation: Operation::Reject,
        four_eyes: false,
    };
    decide(
        &state,
        &actor,
        &caller,
        (&cluster, &name),
        &at,
        &body,
        decision,
    )
    .await
}

/// Approve or reject: the audit action and the operation for the reviewed plan hash.
struct Decision {
    action: &'static str,
    operation: fn(Option<String>) -> Operation,
    /// Whether four-eyes applies (approvals; a rejection needs no second pair of eyes).
    four_eyes: bool,
}

/// 403 unless `caller` may approve or reject plans of Apps on `cluster` (an approver limited
/// to other clusters may not); promotions, rollbacks and unpins onto Apps there too.
pub(super) fn may_decide(caller: &Caller, cluster: &str) -> Result<(), ApiError> {
    if caller.user.may_decide_on(cluster) {
        return Ok(());
    }
    let clusters = caller.user.clusters.as_deref().unwrap_or_default();
    Err(ApiError::new(
        StatusCode::FORBIDDEN,
        format!(
            "cluster {cluster}: {} may approve and reject only on cluster(s) [{}]",
            caller.user.username,
            clusters.join(", ")
        ),
    ))
}

/// Approves or rejects the Held plan of the App at `{cluster}/{name}`, after checking the
/// caller's clusters; every attempt on an existing App is audited with the plan hash.
async fn decide(
    state: &AppState,
    actor: &Actor,
    caller: &Caller,
    (cluster, name): (&str, &str),
    at: &AppAt,
    body: &Bytes,
    decision: Decision,
) -> Result<Json<Value>, ApiError> {
    let key = key(state, cluster, name, at)?;
    let body: DecisionBody = optional_body(body)?;
    let held = state
        .runner()
        .current_status(&key)
        .await?
        .and_then(|s| s.plan_hash);
    let target = state.runner().address(&key);
    let allowed = match may_decide(caller, cluster) {
        Ok(()) if decision.four_eyes => four_eyes::check(state, caller, &key, &target).await,
        other => other,
    };
    let result = match allowed {
        Ok(()) => state
            .runner()
            .operate(&key, (decision.operation)(body.plan_hash.clone()))
            .await
            .map_err(ApiError::from),
        Err(err) => Err(err),
    };
    let plan = body.plan_hash.or(held).unwrap_or_default();
    let outcome = match &result {
        Ok(_) => format!("success plan={plan}"),
        Err(e) => format!("refused plan={plan}: {}", e.message),
    };
    state
        .store()
        .record_audit(&actor.0, decision.action, &target, &outcome, &now_rfc3339())
        .await;
    Ok(Json(completed(result?)))
}

/// `POST /api/v1/apps/{cluster}/{name}/sync` with optional `{"override_window": true}`: a
/// manual pass. A closed sync window refuses it with 409 and the next opening unless the
/// override is asked for; every sync is audited as `app.sync` with the actor, the override
/// flag and the outcome.
pub async fn sync(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path((cluster, name)): Path<(String, String)>,
    Query(at): Query<AppAt>,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let key = key(&state, &cluster, &name, &at)?;
    let body: SyncBody = optional_body(&body)?;
    let trigger = Trigger::Manual {
        override_windows: body.override_window,
    };
    let result = state
        .runner()
        .operate(&key, Operation::Pass(trigger))
        .await
        .map_err(ApiError::from)
        .and_then(|done| match done {
            Completed::Status(s) if s.phase == Some(Phase::Waiting) => Err(ApiError::new(
                StatusCode::CONFLICT,
                s.message
                    .unwrap_or_else(|| "sync window closed".to_string()),
            )),
            done => Ok(done),
        });
    let outcome = pass_outcome(
        &result,
        &format!("override_window={}", body.override_window),
    );
    let target = state.runner().address(&key);
    state
        .store()
        .record_audit(&actor.0, "app.sync", &target, &outcome, &now_rfc3339())
        .await;
    Ok(Json(completed(result?)))
}

/// The audit outcome of a sync or refresh: `success DETAIL phase=P`, with `plan=HASH` when
/// the pass left a plan Held (four-eyes approval reads it), or `refused DETAIL: ERROR`.
fn pass_outcome(result: &Result<Completed, ApiError>, detail: &str) -> String {
    match result {
        Ok(Completed::Status(s)) => {
            let phase = s.phase.map(|p| format!("{p:?}")).unwrap_or_default();
            match (&s.phase, &s.plan_hash) {
                (Some(Phase::Held), Some(hash)) => format!(
                    "success {detail} phase={phase} {}",
                    four_eyes::plan_word(hash)
                ),
                _ => format!("success {detail} phase={phase}"),
            }
        }
        Ok(Completed::Plan(_)) => format!("success {detail}"),
        Err(e) => format!("refused {detail}: {}", e.message),
    }
}
