//! The users API (admins only): create users with a password and a role, list and show them,
//! change a user's role (and an approver's clusters, and the email address), delete a user
//! (which ends its sessions and revokes its API tokens). The last admin cannot be demoted or
//! deleted (409). Creations, changes and deletions are audited as `user.create`,
//! `user.update` and `user.delete`.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::{Deserialize, Deserializer};

use super::AppState;
use super::account::check_new_password;
use super::auth::Actor;
use super::body::JsonBody;
use super::error::ApiError;
use super::login_limit::MAX_USERNAME_CHARS;
use crate::clusters::kubeconfig::check_dns_label;
use crate::redact::Hidden;
use crate::store::users::{Role, User};
use crate::time::now_rfc3339;

/// The most clusters an approver may be limited to.
pub const MAX_APPROVER_CLUSTERS: usize = 256;
/// The longest email address accepted (RFC 5321's path limit).
pub const MAX_EMAIL_BYTES: usize = 254;

/// `POST /api/v1/users` body. Unknown fields are refused: a misspelt `role` must not create
/// a user with a role nobody asked for.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateUser {
    /// The user name: 1-64 letters, digits, `.`, `_`, `@` or `-`.
    pub username: String,
    /// The password (12 characters to 1024 bytes).
    pub password: String,
    /// `viewer`, `deployer`, `approver` or `admin`.
    pub role: String,
    /// Approvers only: the clusters they may approve on (absent or `null`: every cluster).
    #[serde(default)]
    pub clusters: Option<Vec<String>>,
    /// The user's email address (four-eyes approval matches Git commit authors by it).
    #[serde(default)]
    pub email: Option<String>,
}

impl std::fmt::Debug for CreateUser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CreateUser")
            .field("username", &self.username)
            .field("password", &Hidden)
            .field("role", &self.role)
            .field("clusters", &self.clusters)
            .field("email", &self.email)
            .finish()
    }
}

/// `PATCH /api/v1/users/{name}` body: the fields to change (absent fields keep their value;
/// `null` clears `clusters` or `email`).
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateUser {
    /// The new role.
    #[serde(default)]
    pub role: Option<String>,
    /// The approver's clusters (`null`: every cluster). A user who stops being an approver
    /// loses its cluster list.
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<Vec<String>>")]
    pub clusters: Option<Option<Vec<String>>>,
    /// The email address (`null`: none).
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<String>")]
    pub email: Option<Option<String>>,
}

/// A field that is present (possibly `null`) is `Some`; an absent one stays `None` (default).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    de: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(de).map(Some)
}

fn bad_request(message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, message)
}

/// Whether `username` is a valid new user name: 1-[`MAX_USERNAME_CHARS`] ASCII letters,
/// digits, `.`, `_`, `@` or `-` (no `/`: audit entries name a token's actor `USER/token:…`;
/// nothing that needs escaping in a URL path).
pub fn is_username(username: &str) -> bool {
    !username.is_empty()
        && username.len() <= MAX_USERNAME_CHARS
        && username
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'@' | b'-'))
}

/// 400 naming the field unless `username` [`is_username`].
fn check_username(username: &str) -> Result<(), ApiError> {
    if is_username(username) {
        Ok(())
    } else {
        Err(bad_request(format!(
            "username: must be 1-{MAX_USERNAME_CHARS} letters, digits, '.', '_', '@' or '-'"
        )))
    }
}

/// Parses the `role` field (400 naming the field).
pub fn parse_role(text: &str) -> Result<Role, ApiError> {
    text.parse()
        .map_err(|err| bad_request(format!("role: {err}")))
}

/// Checks an approver's cluster list against its role: only approvers have one, each entry
/// is a cluster name (a DNS label; `local` is the management cluster).
fn check_clusters(role: Role, clusters: Option<&[String]>) -> Result<(), ApiError> {
    let Some(clusters) = clusters else {
        return Ok(());
    };
    if role != Role::Approver {
        return Err(bad_request(format!(
            "clusters: only approvers are limited to clusters (this user is {role})"
        )));
    }
    if clusters.len() > MAX_APPROVER_CLUSTERS {
        return Err(bad_request(format!(
            "clusters: at most {MAX_APPROVER_CLUSTERS} clusters"
        )));
    }
    for (index, cluster) in clusters.iter().enumerate() {
        check_dns_label(&format!("clusters[{index}]"), cluster)
            .map_err(|err| bad_request(err.to_string()))?;
    }
    Ok(())
}

/// Checks an email address: at most [`MAX_EMAIL_BYTES`], one `@` with text on both sides, no
/// spaces or control characters.
fn check_email(email: Option<&str>) -> Result<(), ApiError> {
    let Some(email) = email else {
        return Ok(());
    };
    let ok = email.len() <= MAX_EMAIL_BYTES
        && !email.chars().any(|c| c.is_whitespace() || c.is_control())
        && email
            .split_once('@')
            .is_some_and(|(local, domain)| !local.is_empty() && !domain.is_empty());
    if ok {
        Ok(())
    } else {
        Err(bad_request(format!(
            "email: must be an address like name@example.com, at most {MAX_EMAIL_BYTES} bytes"
        )))
    }
}

/// A short description of a user's access for audit outcomes: `role=approver clusters=a,b`.
fn describe(user: &User) -> String {
    match &user.clusters {
        Some(clusters) => format!("role={} clusters={}", user.role, clusters.join(",")),
        None => format!("role={}", user.role),
    }
}

/// Records `action` on `target` by `actor` with `result`'s outcome (`success …` or
/// `refused: …`).
async fn audit(
    state: &AppState,
    actor: &Actor,
    action: &str,
    target: &str,
    result: Result<String, &ApiError>,
) {
    let outcome = match result {
        Ok(detail) if detail.is_empty() => "success".to_string(),
        Ok(detail) => format!("success {detail}"),
        Err(err) => format!("refused: {}", err.message),
    };
    state
        .store()
        .record_audit(&actor.0, action, target, &outcome, &now_rfc3339())
        .await;
}

fn not_found(username: &str) -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, format!("user {username} not found"))
}

/// `POST /api/v1/users`: creates a user (201 with the user, never the password).
pub async fn create(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    JsonBody(body): JsonBody<CreateUser>,
) -> Result<Response, ApiError> {
    check_username(&body.username)?;
    check_new_password("password", &body.password)?;
    let role = parse_role(&body.role)?;
    check_clusters(role, body.clusters.as_deref())?;
    check_email(body.email.as_deref())?;
    let user = User {
        username: body.username,
        role,
        clusters: body.clusters,
        email: body.email,
        created_at: now_rfc3339(),
    };
    let password = body.password;
    let hash = state
        .password_workers()
        .hash(password)
        .await
        .map_err(|err| ApiError::internal(&err))?;
    let result = state
        .store()
        .create_user(&user, &hash)
        .await
        .map_err(ApiError::from);
    let described = describe(&user);
    audit(
        &state,
        &actor,
        "user.create",
        &user.username,
        result.as_ref().map(|()| described),
    )
    .await;
    result?;
    Ok((StatusCode::CREATED, Json(user)).into_response())
}

/// `GET /api/v1/users`: every user (name, role, clusters, email, created).
pub async fn list(State(state): State<AppState>) -> Result<Json<serde_json::Value>, ApiError> {
    let users = state.store().users().await?;
    Ok(Json(serde_json::json!({ "users": users })))
}

/// `GET /api/v1/users/{name}`.
pub async fn get(
    State(state): State<AppState>,
    Path(username): Path<String>,
) -> Result<Json<User>, ApiError> {
    state
        .store()
        .user(&username)
        .await?
        .map(Json)
        .ok_or_else(|| not_found(&username))
}

/// `PATCH /api/v1/users/{name}`: changes the role, the approver's clusters or the email.
/// Demoting the last admin is refused (409).
pub async fn update(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(username): Path<String>,
    JsonBody(body): JsonBody<UpdateUser>,
) -> Result<Json<User>, ApiError> {
    let store = state.store();
    let current = store
        .user(&username)
        .await?
        .ok_or_else(|| not_found(&username))?;
    let role = body.role.as_deref().map(parse_role).transpose()?;
    let role = role.unwrap_or(current.role);
    let clusters = match body.clusters {
        Some(clusters) => clusters,
        None if role == Role::Approver => current.clusters.clone(),
        None => None,
    };
    check_clusters(role, clusters.as_deref())?;
    let email = body.email.unwrap_or_else(|| current.email.clone());
    check_email(email.as_deref())?;
    let updated = User {
        role,
        clusters,
        email,
        ..current.clone()
    };
    let result = match store.update_user(&updated).await {
        Ok(true) => Ok(()),
        Ok(false) => Err(not_found(&username)),
        Err(err) => Err(ApiError::from(err)),
    };
    let described = format!("{} (was {})", describe(&updated), describe(&current));
    audit(
        &state,
        &actor,
        "user.update",
        &username,
        result.as_ref().map(|()| described),
    )
    .await;
    result?;
    Ok(Json(updated))
}

/// `DELETE /api/v1/users/{name}`: deletes the user, ends its sessions and revokes its API
/// tokens. Deleting the last admin is refused (409).
pub async fn remove(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(username): Path<String>,
) -> Result<StatusCode, ApiError> {
    let result = match state.store().delete_user(&username).await {
        Ok(true) => Ok(()),
        Ok(false) => Err(not_found(&username)),
        Err(err) => Err(ApiError::from(err)),
    };
    audit(
        &state,
        &actor,
        "user.delete",
        &username,
        result.as_ref().map(|()| String::new()),
    )
    .await;
    result?;
    Ok(StatusCode::NO_CONTENT)
}
