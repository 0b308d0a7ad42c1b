//! Authentication and authorisation: users (argon2 password hashes), login sessions in an
//! HttpOnly SameSite cookie, bearer API tokens, each route's least role, the internal token,
//! and CSRF protection for cookie-authenticated writes (they must be
//! `Content-Type: application/json`, which a cross-site form cannot send without a CORS
//! preflight).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::AppState;
use super::body::JsonBody;
use super::error::ApiError;
use super::login_audit::{self, Failure};
use super::login_limit::{CHECK_WAIT, MAX_USERNAME_CHARS, bounded_username};
use crate::redact::Hidden;
use crate::store::auth::LAST_USED_RESOLUTION_SECS;
use crate::store::users::{Role, User};
use crate::time::now_rfc3339;

/// The user name of the first administrator (created by `wardn serve` on an empty store).
pub const ADMIN_USER: &str = "admin";
/// Name of the session cookie.
pub const SESSION_COOKIE: &str = "wardn_session";
/// Session lifetime in seconds (12 hours).
pub const SESSION_TTL_SECS: i64 = 12 * 3600;
/// Prefix of API tokens, so they are recognisable in secret scanners.
pub const TOKEN_PREFIX: &str = "wardn_";

/// Who is making a request, as recorded in audit entries: the user name for a session,
/// `USER/token:NAME (ID)` for an API token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor(pub String);

/// The authenticated user of a request, beside its [`Actor`]: the user as stored, the role
/// the request acts with, and which session or API token authenticated it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The user, as stored now (its role, approver clusters and email).
    pub user: User,
    /// The role this request acts with: the user's, or for an API token the lower of the
    /// token's and the user's.
    pub role: Role,
    /// The SHA-256 hash of the session cookie, when a session authenticated the request.
    pub session_hash: Option<String>,
    /// The id of the API token, when a token authenticated the request.
    pub token_id: Option<String>,
}

/// Errors of the authentication helpers.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// The random generator failed.
    #[error("random generator failed: {0}")]
    Random(String),
    /// Hashing a password failed.
    #[error(transparent)]
    Password(#[from] super::passwords::PasswordError),
}

/// The `Set-Cookie` value of a session cookie holding `value` for `max_age` seconds (0 ends
/// it): HttpOnly, SameSite=Strict, and `Secure` when the API is reached over https.
pub fn set_session_cookie(state: &AppState, value: &str, max_age: i64) -> String {
    let secure = if state.secure_cookies() {
        "; Secure"
    } else {
        ""
    };
    format!(
        "{SESSION_COOKIE}={value}; HttpOnly; SameSite=Strict; Path=/; Max-Age={max_age}{secure}"
    )
}

/// `count` random bytes, URL-safe base64.
pub fn random_secret(count: usize) -> Result<String, AuthError> {
    let mut bytes = vec![0u8; count];
    getrandom::fill(&mut bytes).map_err(|err| AuthError::Random(err.to_string()))?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

/// SHA-256 hex of a high-entropy secret (session or API token), as stored.
pub fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// An argon2id PHC string for `password`, computed on the calling thread in a buffer of its
/// own (for start-up; request handlers use the [`super::passwords`] workers).
pub fn hash_password(password: &str) -> Result<String, AuthError> {
    Ok(super::passwords::hash_with(
        password.as_bytes(),
        &mut Vec::new(),
    )?)
}

pub(super) fn now_secs() -> i64 {
    jiff::Timestamp::now().as_second()
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
        .map(str::trim)
}

pub(super) fn session_cookie(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == SESSION_COOKIE)
        .map(|(_, value)| value)
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"))
}

/// Who made a request: the user (session or API token), the role it acts with, and which
/// session or token authenticated it. Built by [`require_role`], from the database, at every
/// request: a role change, a demotion or a deletion takes effect on the next request.
async fn authenticate(
    state: &AppState,
    method: &Method,
    headers: &HeaderMap,
) -> Result<(Actor, Caller), ApiError> {
    let now = now_secs();
    let gone = || ApiError::unauthorized("the user of this session or token no longer exists");
    if let Some(token) = bearer(headers) {
        let token = state
            .store()
            .api_token(&token_hash(token))
            .await?
            .ok_or_else(|| ApiError::unauthorized("invalid API token"))?;
        if token.expires_at <= now {
            return Err(ApiError::unauthorized(
                "API token expired; create a new one (POST /api/v1/tokens)",
            ));
        }
        let user = state
            .store()
            .user(&token.username)
            .await?
            .ok_or_else(gone)?;
        if token
            .last_used_at
            .is_none_or(|at| at <= now - LAST_USED_RESOLUTION_SECS)
        {
            // Bookkeeping only: a failed write must not refuse a valid token.
            if let Err(err) = state.store().touch_api_token(&token.id, now).await {
                tracing::warn!(error = %err, token = %token.id, "cannot record API token use");
            }
        }
        Ok((
            Actor(format!(
                "{}/token:{} ({})",
                user.username, token.name, token.id
            )),
            Caller {
                // A token never acts above its user's current role.
                role: token.role.map_or(user.role, |role| role.min(user.role)),
                user,
                session_hash: None,
                token_id: Some(token.id),
            },
        ))
    } else if let Some(session) = session_cookie(headers) {
        let hash = token_hash(session);
        let username = state
            .store()
            .session_user(&hash, now)
            .await?
            .ok_or_else(|| ApiError::unauthorized("session expired or invalid; log in again"))?;
        let user = state.store().user(&username).await?.ok_or_else(gone)?;
        let safe = matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS);
        if !safe && !is_json(headers) {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "cookie-authenticated writes require Content-Type: application/json (CSRF protection)",
            ));
        }
        Ok((
            Actor(username),
            Caller {
                role: user.role,
                user,
                session_hash: Some(hash),
                token_id: None,
            },
        ))
    } else {
        Err(ApiError::unauthorized(
            "authentication required: log in (POST /api/v1/auth/login) or send Authorization: Bearer TOKEN",
        ))
    }
}

/// Whether `headers` carry the session cookie of a live session of an existing user (the UI's
/// pages redirect to the login page otherwise). A store failure counts as not signed in.
pub async fn signed_in(state: &AppState, headers: &HeaderMap) -> bool {
    let Some(session) = session_cookie(headers) else {
        return false;
    };
    match state
        .store()
        .session_user(&token_hash(session), now_secs())
        .await
    {
        Ok(Some(username)) => matches!(state.store().user(&username).await, Ok(Some(_))),
        Ok(None) => false,
        Err(err) => {
            tracing::warn!(error = %err, "cannot check a UI session");
            false
        }
    }
}

/// Middleware for the routes of [`super::Access::Role`]: a bearer API token or a session
/// cookie is required (401), acting with at least the route's role (403 naming both roles);
/// writes authenticated by cookie must be JSON (CSRF protection). Hands the handlers the
/// [`Actor`] and the [`Caller`].
pub async fn require_role(
    State((state, needed)): State<(AppState, Role)>,
    mut request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    // The request itself is not `Sync`: its method and headers are lent instead.
    let (actor, caller) = authenticate(&state, request.method(), request.headers()).await?;
    if caller.role < needed {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            format!("route needs role {needed}; you are {}", caller.role),
        ));
    }
    request.extensions_mut().insert(caller);
    request.extensions_mut().insert(actor);
    Ok(next.run(request).await)
}

/// Middleware for `/internal` routes: `Authorization: Bearer $WARDN_INTERNAL_TOKEN`.
pub async fn require_internal(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let Some(expected) = state.internal_token_hash() else {
        return Err(ApiError::unauthorized(
            "internal endpoints are disabled: WARDN_INTERNAL_TOKEN is not set on the server",
        ));
    };
    // Comparing digests keeps the comparison independent of the secret's bytes.
    match bearer(request.headers()) {
        Some(token) if token_hash(token) == expected => Ok(next.run(request).await),
        _ => Err(ApiError::unauthorized("internal token required")),
    }
}

/// `POST /api/v1/auth/login` body.
#[derive(Deserialize, schemars::JsonSchema)]
pub struct LoginRequest {
    /// User name.
    pub username: String,
    /// Password.
    pub password: String,
}

impl std::fmt::Debug for LoginRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoginRequest")
            .field("username", &self.username)
            .field("password", &Hidden)
            .finish()
    }
}

/// A 429 answer with `Retry-After` (rounded up: a client waiting the advertised seconds must
/// get through).
fn too_many(wait: Duration, message: &str) -> Response {
    let seconds = (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1);
    let error = ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        format!("{message}; retry in {seconds} s"),
    );
    (
        [(header::RETRY_AFTER, seconds.to_string())],
        error.into_response(),
    )
        .into_response()
}

/// `POST /api/v1/auth/login`: checks the password and sets the session cookie.
///
/// The user name is cut to [`MAX_USERNAME_CHARS`] before any use. The attempt is counted
/// against the peer address and the (address, user) pair before the password is checked
/// ([`super::login_limit::LoginLimiter`]); at most a few argon2 checks run at once
/// ([`super::login_limit::PasswordChecks`]), each on one of the [`super::passwords`] workers
/// and its reused memory, and a login that finds no free slot at once (too many waiting
/// already) or within [`CHECK_WAIT`] gets 429. Failures are audited per
/// source and window ([`super::login_audit`]); successes one entry each.
pub async fn login(
    State(state): State<AppState>,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    JsonBody(body): JsonBody<LoginRequest>,
) -> Result<Response, ApiError> {
    let ip = peer.map_or(
        IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        |Extension(ConnectInfo(addr))| addr.ip(),
    );
    let too_long = body.username.chars().nth(MAX_USERNAME_CHARS).is_some();
    let username = bounded_username(&body.username).to_string();
    drop(body.username);
    let failed = |kind: Failure| {
        let rows = state
            .failed_logins()
            .failed(ip, &username, kind, Instant::now());
        login_audit::write(state.store(), rows)
    };
    let admitted = match state
        .login_limiter()
        .attempt(ip, &username, super::login_limit::now_ms())
        .await?
    {
        Ok(admitted) => admitted,
        Err(wait) => {
            failed(Failure::RateLimited).await;
            return Ok(too_many(
                wait,
                "too many login attempts for this user from this address",
            ));
        }
    };
    let stored = if too_long {
        None
    } else {
        state.store().password_hash(&username).await?
    };
    let valid = match stored {
        Some(stored) => {
            let Some(_slot) = state.password_checks().acquire(CHECK_WAIT).await else {
                failed(Failure::Busy).await;
                return Ok(too_many(CHECK_WAIT, "too many logins in progress"));
            };
            state
                .password_workers()
                .verify(body.password, stored)
                .await
                .map_err(|err| ApiError::internal(&err))?
        }
        None => false,
    };
    if !valid {
        failed(Failure::InvalidCredentials).await;
        return Err(ApiError::unauthorized("invalid username or password"));
    }
    state
        .store()
        .record_audit(
            &username,
            login_audit::ACTION,
            &username,
            "success",
            &now_rfc3339(),
        )
        .await;
    state.login_limiter().succeeded(&admitted).await?;
    let session = random_secret(32).map_err(|err| ApiError::internal(&err))?;
    state
        .store()
        .create_session(
            &token_hash(&session),
            &username,
            now_secs() + SESSION_TTL_SECS,
        )
        .await?;
    let cookie = set_session_cookie(&state, &session, SESSION_TTL_SECS);
    Ok((
        [(header::SET_COOKIE, cookie)],
        Json(serde_json::json!({ "username": username })),
    )
        .into_response())
}
