//! `wardn serve`: the HTTP API (axum). Every route is declared once in [`route_table`] with its
//! access level (for user routes, the least role that may call it), and the router is built
//! from that table, so the authentication and role requirement of each route is visible in one
//! place, enforced by one middleware and checked by a test that walks the table. The web UI
//! ([`ui`]) is served beside the API and reads everything through it.

pub mod account;
pub mod apps;
pub mod audit;
pub mod auth;
pub mod body;
pub mod clusters;
pub mod error;
pub mod four_eyes;
pub mod listener;
pub mod login_audit;
pub mod login_limit;
pub mod metrics;
pub mod openapi;
pub mod operators;
pub mod passwords;
pub mod promotions;
pub mod recorded_pushes;
pub mod repositories;
pub mod shards;
pub mod shell;
pub mod spool;
pub mod tls;
pub mod tokens;
pub mod ui;
pub mod users;
pub mod webhook;

use std::net::SocketAddr;
use std::sync::Arc;

use crate::daemon::runner::server_requests;
use axum::extract::{DefaultBodyLimit, FromRef};
use axum::http::Method;
use axum::middleware::from_fn_with_state;
use axum::routing::{MethodRouter, delete, get, patch, post, put};
use axum::{Json, Router};

use crate::clusters::registry::Registry;
use crate::daemon::operator::{Operator, OperatorOptions};
use crate::daemon::runner::{Pushes, Runner};
use crate::daemon::{Daemon, DaemonError, ServeOptions};
use crate::seal::Sealer;
use crate::sources::repositories::Repositories;
use crate::sources::webhook::PushTargets;
use crate::sources::webhook::WebhookSecrets;
use crate::store::users::Role;
use crate::store::{Store, StoreError};
use crate::time::now_rfc3339;
use recorded_pushes::RecordedPushes;
use webhook::WebhookState;

/// Largest request body accepted (bigger bodies get 413).
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// State shared by every handler.
#[derive(Clone)]
pub struct AppState {
    registry: Arc<Registry>,
    internal_token_hash: Option<String>,
    webhook: WebhookState,
    runner: Arc<Runner>,
    repositories: Arc<Repositories>,
    login_limiter: Arc<login_limit::LoginLimiter>,
    password_checks: Arc<login_limit::PasswordChecks>,
    password_workers: Arc<passwords::PasswordWorkers>,
    failed_logins: Arc<login_audit::FailedLogins>,
    /// Whether session cookies carry `Secure` (the API is reached over https).
    secure_cookies: bool,
    /// Whether this process reconciles Apps (`false` on `--role server`).
    reconciles_apps: bool,
    /// The open cluster shell sessions.
    shell_sessions: Arc<crate::shell::sessions::Sessions>,
    /// On `--role server`: the sharded operators' Leases, listed by `GET /api/v1/shards`.
    operator_leases: Option<Arc<crate::shard::observer::LeaseObserver>>,
}

impl AppState {
    /// State over `registry`; `/internal` accepts `internal_token` (disabled when `None`);
    /// the Git webhook triggers polls of `webhook.poller`; the Apps API answers from `runner`;
    /// the repositories API manages `repositories`.
    pub fn new(
        registry: Arc<Registry>,
        internal_token: Option<&str>,
        webhook: WebhookState,
        runner: Arc<Runner>,
        repositories: Arc<Repositories>,
    ) -> AppState {
        let login_limiter = Arc::new(login_limit::LoginLimiter::new(registry.store().clone()));
        AppState {
            registry,
            internal_token_hash: internal_token
                .filter(|t| !t.is_empty())
                .map(auth::token_hash),
            webhook,
            runner,
            repositories,
            login_limiter,
            password_checks: Arc::default(),
            password_workers: Arc::default(),
            failed_logins: Arc::default(),
            secure_cookies: false,
            reconciles_apps: true,
            shell_sessions: Arc::default(),
            operator_leases: None,
        }
    }

    /// Marks session cookies `Secure` when `secure` (the API is served or published over
    /// https).
    pub fn with_secure_cookies(self, secure: bool) -> AppState {
        AppState {
            secure_cookies: secure,
            ..self
        }
    }

    /// Notes that this process reconciles no Apps when `reconciles` is false (`--role
    /// server`): the Apps API then says so, rather than looking like an empty fleet.
    pub fn with_reconciled_apps(self, reconciles: bool) -> AppState {
        AppState {
            reconciles_apps: reconciles,
            ..self
        }
    }

    /// Whether this process reconciles Apps.
    pub fn reconciles_apps(&self) -> bool {
        self.reconciles_apps
    }

    /// Lists the sharded operators' Leases through `leases` (`--role server` with a
    /// management cluster), so `GET /api/v1/shards` shows their expiry and claims.
    pub fn with_operator_leases(
        self,
        leases: Option<Arc<crate::shard::observer::LeaseObserver>>,
    ) -> AppState {
        AppState {
            operator_leases: leases,
            ..self
        }
    }

    /// The sharded operators' Leases, when this process lists them.
    pub fn operator_leases(&self) -> Option<&crate::shard::observer::LeaseObserver> {
        self.operator_leases.as_deref()
    }

    /// Whether session cookies carry `Secure`.
    pub fn secure_cookies(&self) -> bool {
        self.secure_cookies
    }

    /// The Git repository registry (credentials, webhook secrets).
    pub fn repositories(&self) -> &Arc<Repositories> {
        &self.repositories
    }

    /// Login attempts per source address and user name (rate limiting, counted in the store).
    pub fn login_limiter(&self) -> &Arc<login_limit::LoginLimiter> {
        &self.login_limiter
    }

    /// The password-check slots (at most a few argon2 checks at once).
    pub fn password_checks(&self) -> &Arc<login_limit::PasswordChecks> {
        &self.password_checks
    }

    /// The threads that hash and check passwords, each reusing one argon2 block buffer.
    pub fn password_workers(&self) -> &Arc<passwords::PasswordWorkers> {
        &self.password_workers
    }

    /// Failed logins, audited one entry per source and window.
    pub fn failed_logins(&self) -> &Arc<login_audit::FailedLogins> {
        &self.failed_logins
    }

    /// The Git poller (commit authors for four-eyes approval).
    pub fn poller(&self) -> &crate::sources::poller::Poller {
        &self.webhook.poller
    }

    /// The Git webhook's state (its delivery counts, for `/metrics`).
    pub fn webhook(&self) -> &WebhookState {
        &self.webhook
    }

    /// The open cluster shell sessions.
    pub fn shell_sessions(&self) -> &Arc<crate::shell::sessions::Sessions> {
        &self.shell_sessions
    }

    /// The App runner.
    pub fn runner(&self) -> &Arc<Runner> {
        &self.runner
    }

    /// The cluster registry.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The store.
    pub fn store(&self) -> &Store {
        self.registry.store()
    }

    fn internal_token_hash(&self) -> Option<&str> {
        self.internal_token_hash.as_deref()
    }
}

/// Lets the Git webhook handler extract its own state from the server's.
impl FromRef<AppState> for WebhookState {
    fn from_ref(state: &AppState) -> WebhookState {
        state.webhook.clone()
    }
}

/// Who may call a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Anyone (login, health).
    Public,
    /// A logged-in user (session cookie) or an API token acting with at least this role.
    Role(Role),
    /// Holders of `WARDN_INTERNAL_TOKEN`.
    Internal,
    /// Holders of `WARDN_INTERNAL_TOKEN`, on a process that reconciles no Apps (`--role
    /// server`): the routes operators report their Apps, statuses and outcomes to; a process
    /// reconciling Apps itself answers 409 (see [`operators`]).
    Operators,
    /// Forges: no session; the handler checks the request's signature against the webhook
    /// secret (see [`crate::sources::webhook`]).
    Webhook,
}

/// How a route answers its errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorShape {
    /// `{"error": MESSAGE}` (every route but the cluster shell's proxy).
    Json,
    /// A Kubernetes `Status` (the cluster shell's proxy, whose client is kubectl).
    KubernetesStatus,
}

/// One API route: method, path, access level and handler.
pub struct RouteSpec {
    /// HTTP method.
    pub method: Method,
    /// Path pattern (axum syntax, `{param}`, `{*rest}`).
    pub path: &'static str,
    /// Who may call it.
    pub access: Access,
    /// How its errors are answered, authentication's and the role check's included.
    pub errors: ErrorShape,
    handler: MethodRouter<AppState>,
}

fn route(
    method: Method,
    path: &'static str,
    access: Access,
    handler: MethodRouter<AppState>,
) -> RouteSpec {
    RouteSpec {
        method,
        path,
        access,
        errors: ErrorShape::Json,
        handler,
    }
}

/// The cluster shell's proxy path.
pub const SHELL_PROXY_PATH: &str = "/api/v1/clusters/{name}/proxy/{session}/{*path}";

/// A route of the cluster shell's proxy for `method`: reads need a viewer, writes an admin;
/// errors are Kubernetes `Status` answers.
fn proxy_route(method: Method, access: Access, handler: MethodRouter<AppState>) -> RouteSpec {
    RouteSpec {
        method,
        path: SHELL_PROXY_PATH,
        access,
        errors: ErrorShape::KubernetesStatus,
        handler,
    }
}

/// `GET /api/v1/health`: answers while the process runs (every role serves it).
pub async fn health() -> Json<serde_json::Value> {
    Json(serde_json::json!({ "status": "ok" }))
}

/// Every API route the server answers (the web UI's HTML pages are in [`ui::router`]).
pub fn route_table() -> Vec<RouteSpec> {
    use Access::{Internal, Operators, Public, Webhook};
    const VIEWER: Access = Access::Role(Role::Viewer);
    const DEPLOYER: Access = Access::Role(Role::Deployer);
    const APPROVER: Access = Access::Role(Role::Approver);
    const ADMIN: Access = Access::Role(Role::Admin);
    vec![
        route(Method::GET, "/api/v1/health", Public, get(health)),
        route(Method::GET, "/metrics", Public, get(metrics::scrape)),
        route(
            Method::POST,
            "/api/v1/auth/login",
            Public,
            post(auth::login),
        ),
        route(
            Method::POST,
            "/api/v1/auth/logout",
            VIEWER,
            post(account::logout),
        ),
        route(Method::GET, "/api/v1/auth/me", VIEWER, get(account::me)),
        route(
            Method::POST,
            "/api/v1/auth/password",
            VIEWER,
            post(account::change_password),
        ),
        route(Method::GET, "/api/v1/tokens", VIEWER, get(tokens::list)),
        route(Method::POST, "/api/v1/tokens", VIEWER, post(tokens::create)),
        route(
            Method::DELETE,
            "/api/v1/tokens/{id}",
            VIEWER,
            delete(tokens::revoke),
        ),
        route(Method::GET, "/api/v1/clusters", VIEWER, get(clusters::list)),
        route(
            Method::POST,
            "/api/v1/clusters",
            ADMIN,
            post(clusters::create),
        ),
        route(
            Method::POST,
            "/api/v1/clusters/test",
            ADMIN,
            post(clusters::test),
        ),
        route(
            Method::POST,
            "/api/v1/clusters/reseal",
            ADMIN,
            post(clusters::reseal),
        ),
        route(
            Method::GET,
            "/api/v1/clusters/{name}",
            VIEWER,
            get(clusters::get),
        ),
        route(
            Method::PUT,
            "/api/v1/clusters/{name}",
            ADMIN,
            put(clusters::update),
        ),
        route(
            Method::DELETE,
            "/api/v1/clusters/{name}",
            ADMIN,
            delete(clusters::remove),
        ),
        route(
            Method::POST,
            "/api/v1/clusters/{name}/check",
            ADMIN,
            post(clusters::check),
        ),
        route(
            Method::POST,
            "/api/v1/clusters/{name}/shell",
            VIEWER,
            post(shell::open),
        ),
        route(
            Method::DELETE,
            "/api/v1/clusters/{name}/shell/{session}",
            VIEWER,
            delete(shell::close),
        ),
        route(
            Method::POST,
            "/api/v1/clusters/{name}/shell/commands",
            VIEWER,
            post(shell::command),
        ),
        proxy_route(Method::GET, VIEWER, get(shell::proxy)),
        proxy_route(Method::POST, ADMIN, post(shell::proxy)),
        proxy_route(Method::PUT, ADMIN, put(shell::proxy)),
        proxy_route(Method::PATCH, ADMIN, patch(shell::proxy)),
        proxy_route(Method::DELETE, ADMIN, delete(shell::proxy)),
        route(Method::GET, "/api/v1/audit", ADMIN, get(audit::list)),
        route(
            Method::GET,
            "/api/v1/audit/verify",
            ADMIN,
            get(audit::verify),
        ),
        route(
            Method::GET,
            "/api/v1/repositories",
            VIEWER,
            get(repositories::list),
        ),
        route(
            Method::POST,
            "/api/v1/repositories",
            ADMIN,
            post(repositories::create),
        ),
        route(
            Method::POST,
            "/api/v1/repositories/reseal",
            ADMIN,
            post(repositories::reseal),
        ),
        route(
            Method::GET,
            "/api/v1/repositories/{id}",
            VIEWER,
            get(repositories::get),
        ),
        route(
            Method::PUT,
            "/api/v1/repositories/{id}",
            ADMIN,
            put(repositories::update),
        ),
        route(
            Method::DELETE,
            "/api/v1/repositories/{id}",
            ADMIN,
            delete(repositories::remove),
        ),
        route(Method::GET, "/api/v1/users", ADMIN, get(users::list)),
        route(Method::POST, "/api/v1/users", ADMIN, post(users::create)),
        route(Method::GET, "/api/v1/users/{name}", ADMIN, get(users::get)),
        route(
            Method::PATCH,
            "/api/v1/users/{name}",
            ADMIN,
            patch(users::update),
        ),
        route(
            Method::DELETE,
            "/api/v1/users/{name}",
            ADMIN,
            delete(users::remove),
        ),
        route(Method::GET, "/api/v1/shards", VIEWER, get(shards::list)),
        route(Method::GET, "/api/v1/apps", VIEWER, get(apps::list)),
        route(
            Method::GET,
            "/api/v1/apps/{cluster}/{name}",
            VIEWER,
            get(apps::get),
        ),
        route(
            Method::GET,
            "/api/v1/apps/{cluster}/{name}/diff",
            VIEWER,
            get(apps::diff),
        ),
        route(
            Method::GET,
            "/api/v1/apps/{cluster}/{name}/events",
            VIEWER,
            get(apps::events),
        ),
        route(
            Method::GET,
            "/api/v1/apps/{cluster}/{name}/resources",
            VIEWER,
            get(apps::resources),
        ),
        route(
            Method::POST,
            "/api/v1/apps/{cluster}/{name}/approve",
            APPROVER,
            post(apps::approve),
        ),
        route(
            Method::POST,
            "/api/v1/apps/{cluster}/{name}/reject",
            APPROVER,
            post(apps::reject),
        ),
        route(
            Method::POST,
            "/api/v1/apps/{cluster}/{name}/sync",
            DEPLOYER,
            post(apps::sync),
        ),
        route(
            Method::POST,
            "/api/v1/apps/{cluster}/{name}/refresh",
            DEPLOYER,
            post(apps::refresh),
        ),
        route(
            Method::POST,
            "/api/v1/apps/{cluster}/{name}/promote",
            APPROVER,
            post(promotions::promote),
        ),
        route(
            Method::GET,
            "/api/v1/apps/{cluster}/{name}/promotions",
            VIEWER,
            get(promotions::list),
        ),
        route(
            Method::POST,
            "/api/v1/apps/{cluster}/{name}/rollback",
            APPROVER,
            post(promotions::rollback),
        ),
        route(
            Method::POST,
            "/api/v1/apps/{cluster}/{name}/unpin",
            APPROVER,
            post(promotions::unpin),
        ),
        route(
            Method::POST,
            crate::sources::webhook::ROUTE,
            Webhook,
            post(webhook::git_webhook)
                .layer(DefaultBodyLimit::max(crate::sources::webhook::MAX_BODY)),
        ),
        route(
            Method::GET,
            "/internal/clusters/{name}/kubeconfig",
            Internal,
            get(clusters::internal_kubeconfig),
        ),
        route(
            Method::GET,
            crate::sources::server_credentials::ROUTE,
            Internal,
            get(repositories::internal_credentials),
        ),
        route(
            Method::GET,
            crate::sources::server_pushes::ROUTE,
            Internal,
            get(recorded_pushes::internal_pushes),
        ),
        route(
            Method::PUT,
            crate::daemon::runner::APPS_ROUTE,
            Operators,
            put(operators::report_apps).layer(DefaultBodyLimit::max(operators::MAX_BODY)),
        ),
        route(
            Method::PUT,
            crate::daemon::runner::HEARTBEAT_ROUTE,
            Operators,
            put(operators::heartbeat),
        ),
        route(
            Method::PUT,
            crate::daemon::runner::STATUS_ROUTE,
            Operators,
            put(operators::put_status).layer(DefaultBodyLimit::max(operators::MAX_BODY)),
        ),
        route(
            Method::DELETE,
            crate::daemon::runner::STATUS_ROUTE,
            Operators,
            delete(operators::delete_status),
        ),
        route(
            Method::GET,
            crate::daemon::runner::STATUS_ROUTE,
            Operators,
            get(operators::statuses),
        ),
        route(
            Method::GET,
            crate::daemon::runner::REPORTED_APP_ROUTE,
            Operators,
            get(operators::reported_app),
        ),
        route(
            Method::POST,
            crate::daemon::runner::PROMOTIONS_ROUTE,
            Operators,
            post(operators::record_promotion),
        ),
        route(
            Method::PUT,
            crate::daemon::runner::PROMOTION_ROUTE,
            Operators,
            put(operators::finish_promotion),
        ),
        route(
            Method::GET,
            server_requests::ROUTE,
            Operators,
            get(operators::requests),
        ),
        route(
            Method::POST,
            server_requests::CLAIM_ROUTE,
            Operators,
            post(operators::claim),
        ),
        route(
            Method::PUT,
            server_requests::OUTCOME_ROUTE,
            Operators,
            put(operators::finish).layer(DefaultBodyLimit::max(operators::MAX_BODY)),
        ),
        route(Method::GET, openapi::ROUTE, Public, get(openapi::serve)),
    ]
}

/// The router for [`route_table`], each route behind the middleware its access level needs,
/// and the web UI's pages ([`ui::router`]).
pub fn router(state: AppState) -> Router {
    let mut router = Router::new();
    for spec in route_table() {
        let handler = match spec.access {
            Access::Public | Access::Webhook => spec.handler,
            Access::Role(role) => spec.handler.route_layer(from_fn_with_state(
                (state.clone(), role),
                auth::require_role,
            )),
            Access::Internal => spec
                .handler
                .route_layer(from_fn_with_state(state.clone(), auth::require_internal)),
            // The token first: without it, a 401 whatever the role.
            Access::Operators => spec
                .handler
                .route_layer(from_fn_with_state(
                    state.clone(),
                    operators::require_server_role,
                ))
                .route_layer(from_fn_with_state(state.clone(), auth::require_internal)),
        };
        let handler = match spec.errors {
            ErrorShape::Json => handler,
            ErrorShape::KubernetesStatus => {
                handler.route_layer(axum::middleware::from_fn(shell::as_kubernetes_status))
            }
        };
        router = router.route(spec.path, handler);
    }
    router
        .merge(ui::router())
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
}

/// Why the server could not start or serve.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The daemon behind the API could not start.
    #[error(transparent)]
    Daemon(#[from] DaemonError),
    /// The store failed while setting up the admin user.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The admin password cannot be set.
    #[error(transparent)]
    Auth(#[from] auth::AuthError),
    /// The TLS certificate or key cannot be used.
    #[error(transparent)]
    Tls(#[from] tls::TlsError),
    /// `--tls-cert` and `--tls-key` go together.
    #[error("--tls-cert and --tls-key go together: give both, or neither")]
    TlsPair,
    /// Binding or serving failed.
    #[error("cannot serve on {addr}: {source}")]
    Io {
        /// The listen address.
        addr: SocketAddr,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// Binds `addr` and reports the address actually bound (useful with port 0).
async fn listen(addr: SocketAddr) -> Result<(tokio::net::TcpListener, SocketAddr), ServeError> {
    let io = |source| ServeError::Io { addr, source };
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(io)?;
    let bound = listener.local_addr().map_err(io)?;
    Ok((listener, bound))
}

/// A bound, ready server: the daemon and the API over it.
pub struct Server {
    listener: tokio::net::TcpListener,
    /// HTTPS, when `--tls-cert`/`--tls-key` are given.
    tls: Option<Arc<rustls::ServerConfig>>,
    state: AppState,
    daemon: Daemon,
    /// The address actually bound (useful with port 0).
    pub addr: SocketAddr,
    /// The admin password, if it was generated at this start (print it once).
    pub generated_admin_password: Option<String>,
}

impl Server {
    /// `https` when the API is served over TLS, else `http`.
    pub fn scheme(&self) -> &'static str {
        if self.tls.is_some() { "https" } else { "http" }
    }
}

/// The hash of the admin password the process is started with (`WARDN_ADMIN_PASSWORD`; `None`
/// when none or empty), for [`ensure_admin`]. Made before the daemon loads its Apps: argon2
/// holds 19 MiB while it hashes, and made on top of a fleet's freshly loaded App records it
/// set the peak resident memory of a sharded replica (`benches/shards.rs`).
pub fn hash_admin_password(password: Option<&str>) -> Result<Option<String>, ServeError> {
    Ok(password
        .filter(|p| !p.is_empty())
        .map(auth::hash_password)
        .transpose()?)
}

/// Sets the password of the user `admin` to the one `given` is the hash of (creating it as
/// an admin if missing: the break-glass way in), or generates one when the store has no user
/// at all. Returns the generated password.
pub async fn ensure_admin(
    store: &Store,
    given: Option<String>,
) -> Result<Option<String>, ServeError> {
    if let Some(hash) = given {
        store
            .upsert_user(auth::ADMIN_USER, &hash, &now_rfc3339())
            .await?;
        return Ok(None);
    }
    // Once any user exists (the admin may have renamed itself away), nothing is generated.
    if store.has_users().await? {
        return Ok(None);
    }
    let generated = auth::random_secret(18)?;
    let hash = auth::hash_password(&generated)?;
    store
        .upsert_user(auth::ADMIN_USER, &hash, &now_rfc3339())
        .await?;
    Ok(Some(generated))
}

/// Where the webhook's pushes go: the runner (its poller and, sharded, the owning replicas),
/// or, on a `--role server` process, the store, for the operators to read.
fn push_targets(options: &ServeOptions, daemon: &Daemon) -> Arc<dyn PushTargets> {
    match options.reconcile_apps {
        true => Arc::new(Pushes::new(Arc::clone(daemon.runner()))),
        false => Arc::new(RecordedPushes::new(daemon.store().clone())),
    }
}

impl Server {
    /// Binds the listener, starts the daemon ([`Daemon::start`]) and sets up the admin user.
    pub async fn bind(options: ServeOptions, sealer: Sealer) -> Result<Server, ServeError> {
        let tls = match (&options.tls_cert, &options.tls_key) {
            (Some(cert), Some(key)) => Some(
                tls::TlsFiles {
                    cert: cert.clone(),
                    key: key.clone(),
                }
                .server_config()?,
            ),
            (None, None) => None,
            _ => return Err(ServeError::TlsPair),
        };
        let (listener, addr) = listen(options.listen).await?;
        let admin_hash = hash_admin_password(options.admin_password.as_deref())?;
        let daemon = Daemon::start(&options, sealer).await?;
        let generated_admin_password = ensure_admin(daemon.store(), admin_hash).await?;
        let webhook = WebhookState::new(
            daemon.poller().clone(),
            Arc::new(
                WebhookSecrets::new(options.webhook_secret.as_deref())
                    .with_provider(daemon.repositories().clone()),
            ),
        )
        .with_targets(push_targets(&options, &daemon));
        let state = AppState::new(
            Arc::clone(daemon.registry()),
            options.internal_token.as_deref(),
            webhook,
            Arc::clone(daemon.runner()),
            Arc::clone(daemon.repositories()),
        )
        .with_reconciled_apps(options.reconcile_apps)
        .with_operator_leases(daemon.operator_leases().cloned())
        .with_secure_cookies(
            tls.is_some()
                || options
                    .public_url
                    .as_deref()
                    .is_some_and(|url| url.starts_with("https://")),
        );
        Ok(Server {
            listener,
            tls,
            state,
            daemon,
            addr,
            generated_admin_password,
        })
    }

    /// The registry behind the server (for in-process consumers such as the reconciler).
    pub fn registry(&self) -> &Arc<Registry> {
        self.daemon.registry()
    }

    /// The App runner (statuses of the Apps loaded from `--apps`).
    pub fn runner(&self) -> &Arc<Runner> {
        self.daemon.runner()
    }

    /// The state the handlers share (tests and benchmarks read the login limiter and the
    /// password-check counters through it).
    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// Serves until `shutdown` completes, then shuts the daemon down.
    pub async fn run(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServeError> {
        tracing::info!(addr = %self.addr, "wardn API listening");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let failed = Arc::clone(self.state.failed_logins());
        let store = self.state.store().clone();
        let sweeper = tokio::spawn(async move {
            login_audit::sweep(&failed, &store, async {
                let _ = stopped.await;
            })
            .await;
        });
        listener::serve(self.listener, router(self.state), self.tls, shutdown).await;
        // The counts of failed logins still open are written before the store closes.
        let _ = stop.send(());
        if let Err(err) = sweeper.await {
            tracing::error!(%err, "the failed-login audit sweeper ended abnormally");
        }
        self.daemon.shutdown().await;
        Ok(())
    }
}

/// `--role operator`: the operator ([`Operator`]) and its listener, which serves
/// `/api/v1/health` and `/metrics` (this replica's passes and, sharded, its share).
pub struct OperatorServer {
    listener: tokio::net::TcpListener,
    operator: Arc<Operator>,
    /// The address actually bound.
    pub addr: SocketAddr,
}

impl OperatorServer {
    /// Binds the health listener and starts the operator ([`Operator::start`]).
    pub async fn bind(options: OperatorOptions) -> Result<OperatorServer, ServeError> {
        let (listener, addr) = listen(options.listen).await?;
        let operator = Arc::new(Operator::start(&options).await?);
        Ok(OperatorServer {
            listener,
            operator,
            addr,
        })
    }

    /// The App runner (statuses of the reconciled Apps).
    pub fn runner(&self) -> &Arc<Runner> {
        self.operator.runner()
    }

    /// Serves `/api/v1/health` and `/metrics` until `shutdown` completes, then stops the
    /// operator.
    pub async fn run(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServeError> {
        tracing::info!(addr = %self.addr, "wardn operator listening (health and metrics)");
        let operator = Arc::clone(&self.operator);
        let scrape = move || {
            let text = operator.metrics_text();
            async move {
                (
                    [(
                        http::header::CONTENT_TYPE,
                        crate::reconcile::metrics::CONTENT_TYPE,
                    )],
                    text,
                )
            }
        };
        let router = Router::new()
            .route("/api/v1/health", get(health))
            .route("/metrics", get(scrape));
        listener::serve(self.listener, router, None, shutdown).await;
        self.operator.shutdown().await;
        Ok(())
    }
}

/// Tunes the C allocator for a long-running daemon. Call once at start, before any thread.
///
/// - Large blocks (1 MiB and more) go back to the system when freed. glibc otherwise raises
///   its mmap threshold after the first large free, and then keeps large freed buffers
///   resident in each thread's arena (the argon2 blocks of a hash made outside the
///   [`passwords`] workers, at start-up, among them): memory that requests could pin.
/// - At most two arenas. glibc's default (eight per core) gives the runtime's worker and
///   blocking threads arenas of their own, each keeping its freed memory: a replica of a
///   four-replica fleet of 10,000 Apps peaked at 192 MiB with the default and 172 MiB with
///   two, converging as fast (`benches/shards.rs`).
pub fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes allocator tuning; M_MMAP_THRESHOLD with a value within its
    // documented range (at most 32 MiB on 64-bit) and M_ARENA_MAX with a positive count are
    // always valid.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_admin_password_is_hashed_only_when_given() {
        assert_eq!(hash_admin_password(None).ok(), Some(None));
        assert_eq!(
            hash_admin_password(Some("")).ok(),
            Some(None),
            "empty: none given"
        );
        let hash = hash_admin_password(Some("break-glass-0123"))
            .ok()
            .flatten()
            .unwrap_or_default();
        assert!(passwords::verify_with(
            b"break-glass-0123",
            &hash,
            &mut Vec::new()
        ));
        assert!(!passwords::verify_with(
            b"break-glass-0124",
            &hash,
            &mut Vec::new()
        ));
    }
}
