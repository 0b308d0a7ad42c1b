//! `wardn serve`: the HTTP API (axum). Every route is declared once in [`route_table`] with its
//! access level, and the router is built from that table, so the authentication requirement of
//! each route is visible in one place and checked by a test that walks the table.

pub mod apps;
pub mod audit;
pub mod auth;
pub mod body;
pub mod clusters;
pub mod error;
pub mod login_limit;
pub mod metrics;
pub mod repositories;
pub mod role;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{DefaultBodyLimit, FromRef};
use axum::http::Method;
use axum::middleware::from_fn_with_state;
use axum::routing::{MethodRouter, delete, get, post, put};
use axum::{Json, Router};

use crate::app::files::AppsDirError;
use crate::clusters::registry::Registry;
use crate::clusters::resolve::{ClusterSource, Resolver};
use crate::clusters::throttle::Throttles;
use crate::reconcile::pipeline::Options;
use crate::reconcile::upkeep::Scheduling;
use crate::runner::Runner;
use crate::seal::{SealError, Sealer};
use crate::sources::git::GitSettings;
use crate::sources::poller::{Poller, PollerConfig};
use crate::sources::repositories::Repositories;
use crate::sources::webhook::{self, WebhookSecrets, WebhookState};
use crate::store::{Store, StoreError};
use crate::time::now_rfc3339;

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
        AppState {
            registry,
            internal_token_hash: internal_token
                .filter(|t| !t.is_empty())
                .map(auth::token_hash),
            webhook,
            runner,
            repositories,
            login_limiter: Arc::default(),
        }
    }

    /// The Git repository registry (credentials, webhook secrets).
    pub fn repositories(&self) -> &Arc<Repositories> {
        &self.repositories
    }

    /// Failed logins per user name (rate limiting).
    pub fn login_limiter(&self) -> &login_limit::LoginLimiter {
        &self.login_limiter
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
    /// A logged-in user (session cookie) or an API token.
    User,
    /// Holders of `WARDN_INTERNAL_TOKEN`.
    Internal,
    /// Forges: no session; the handler checks the request's signature against the webhook
    /// secret (see [`crate::sources::webhook`]).
    Webhook,
}

/// One API route: method, path, access level and handler.
pub struct RouteSpec {
    /// HTTP method.
    pub method: Method,
    /// Path pattern (axum syntax, `{param}`).
    pub path: &'static str,
    /// Who may call it.
    pub access: Access,
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
        handler,
    }
}

/// `GET /api/v1/health`: answers while the process runs (every role serves it).
pub async fn health() -> Json<serde_json::Value> {
    Json(serde_json::json!({ "status": "ok" }))
}

/// Every route the server answers.
pub fn route_table() -> Vec<RouteSpec> {
    use Access::{Internal, Public, User, Webhook};
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
            User,
            post(auth::logout),
        ),
        route(
            Method::POST,
            "/api/v1/tokens",
            User,
            post(auth::create_token),
        ),
        route(Method::GET, "/api/v1/clusters", User, get(clusters::list)),
        route(
            Method::POST,
            "/api/v1/clusters",
            User,
            post(clusters::create),
        ),
        route(
            Method::POST,
            "/api/v1/clusters/test",
            User,
            post(clusters::test),
        ),
        route(
            Method::POST,
            "/api/v1/clusters/reseal",
            User,
            post(clusters::reseal),
        ),
        route(
            Method::GET,
            "/api/v1/clusters/{name}",
            User,
            get(clusters::get),
        ),
        route(
            Method::PUT,
            "/api/v1/clusters/{name}",
            User,
            put(clusters::update),
        ),
        route(
            Method::DELETE,
            "/api/v1/clusters/{name}",
            User,
            delete(clusters::remove),
        ),
        route(
            Method::POST,
            "/api/v1/clusters/{name}/check",
            User,
            post(clusters::check),
        ),
        route(Method::GET, "/api/v1/audit", User, get(audit::list)),
        route(
            Method::GET,
            "/api/v1/repositories",
            User,
            get(repositories::list),
        ),
        route(
            Method::POST,
            "/api/v1/repositories",
            User,
            post(repositories::create),
        ),
        route(
            Method::POST,
            "/api/v1/repositories/reseal",
            User,
            post(repositories::reseal),
        ),
        route(
            Method::GET,
            "/api/v1/repositories/{id}",
            User,
            get(repositories::get),
        ),
        route(
            Method::PUT,
            "/api/v1/repositories/{id}",
            User,
            put(repositories::update),
        ),
        route(
            Method::DELETE,
            "/api/v1/repositories/{id}",
            User,
            delete(repositories::remove),
        ),
        route(Method::GET, "/api/v1/apps", User, get(apps::list)),
        route(
            Method::GET,
            "/api/v1/apps/{cluster}/{name}",
            User,
            get(apps::get),
        ),
        route(
            Method::GET,
            "/api/v1/apps/{cluster}/{name}/diff",
            User,
            get(apps::diff),
        ),
        route(
            Method::POST,
            "/api/v1/apps/{cluster}/{name}/approve",
            User,
            post(apps::approve),
        ),
        route(
            Method::POST,
            "/api/v1/apps/{cluster}/{name}/reject",
            User,
            post(apps::reject),
        ),
        route(
            Method::POST,
            "/api/v1/apps/{cluster}/{name}/sync",
            User,
            post(apps::sync),
        ),
        route(
            Method::POST,
            "/api/v1/apps/{cluster}/{name}/refresh",
            User,
            post(apps::refresh),
        ),
        route(
            Method::POST,
            webhook::ROUTE,
            Webhook,
            post(webhook::git_webhook).layer(DefaultBodyLimit::max(webhook::MAX_BODY)),
        ),
        route(
            Method::GET,
            "/internal/clusters/{name}/kubeconfig",
            Internal,
            get(clusters::internal_kubeconfig),
        ),
    ]
}

/// The router for [`route_table`], each route behind the middleware its access level needs.
pub fn router(state: AppState) -> Router {
    let mut router = Router::new();
    for spec in route_table() {
        let handler = match spec.access {
            Access::Public | Access::Webhook => spec.handler,
            Access::User => spec
                .handler
                .route_layer(from_fn_with_state(state.clone(), auth::require_user)),
            Access::Internal => spec
                .handler
                .route_layer(from_fn_with_state(state.clone(), auth::require_internal)),
        };
        router = router.route(spec.path, handler);
    }
    router
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
}

/// Settings of `wardn serve`.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Address to listen on.
    pub listen: SocketAddr,
    /// Data directory (holds the SQLite file).
    pub data_dir: PathBuf,
    /// PostgreSQL URL; SQLite in `data_dir` when absent.
    pub database_url: Option<String>,
    /// Admin password to set (`WARDN_ADMIN_PASSWORD`); generated and printed once if absent
    /// and no admin exists yet.
    pub admin_password: Option<String>,
    /// `WARDN_INTERNAL_TOKEN`; `/internal` is disabled without it.
    pub internal_token: Option<String>,
    /// `WARDN_WEBHOOK_SECRET`; the Git webhook rejects every request without it.
    pub webhook_secret: Option<String>,
    /// Directory of App YAML files to reconcile (`--apps`); no Apps when absent.
    pub apps_dir: Option<PathBuf>,
    /// Kubeconfig of the management cluster (`destination.cluster: ""`); inferred from the
    /// environment (in-cluster, `KUBECONFIG`, `~/.kube/config`) when absent.
    pub management_kubeconfig: Option<PathBuf>,
    /// Extra CA certificates (PEM file) trusted for `https://` Git remotes, on top of the
    /// platform's roots (`--git-ca-file`).
    pub git_ca_file: Option<PathBuf>,
    /// Namespaces whose App resources are reconciled (`--namespaces`); empty: all.
    pub app_namespaces: Vec<String>,
    /// Whether this process reconciles Apps (`--role all`); `--role server` only serves the
    /// API, so neither App resources nor `--apps` are watched.
    pub reconcile_apps: bool,
    /// Time between background probe rounds.
    pub probe_interval: Duration,
    /// Time limit of one connection attempt or probe.
    pub probe_timeout: Duration,
    /// Resync interval, per-cluster rate limits and retry backoff.
    pub scheduling: Scheduling,
    /// Health and CRD timeouts of a pass, and how long a Held plan may be approved.
    pub pipeline: Options,
}

/// Local defaults: 127.0.0.1:8080, `.data`, SQLite, no Apps, no management cluster, probes
/// every 30 s with a 10 s limit.
impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            data_dir: PathBuf::from(".data"),
            database_url: None,
            admin_password: None,
            internal_token: None,
            webhook_secret: None,
            apps_dir: None,
            management_kubeconfig: None,
            git_ca_file: None,
            app_namespaces: Vec::new(),
            reconcile_apps: true,
            probe_interval: Duration::from_secs(30),
            probe_timeout: Duration::from_secs(10),
            scheduling: Scheduling::default(),
            pipeline: Options::default(),
        }
    }
}

/// Errors starting or running the server.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The credentials key is missing or invalid.
    #[error(transparent)]
    Key(#[from] SealError),
    /// The store cannot be opened.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The admin password cannot be set.
    #[error(transparent)]
    Auth(#[from] auth::AuthError),
    /// The Apps directory cannot be read or watched.
    #[error(transparent)]
    Apps(#[from] AppsDirError),
    /// The Git CA file cannot be read.
    #[error("--git-ca-file {path}: {source}")]
    GitCa {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The management cluster's kubeconfig is unusable.
    #[error("management kubeconfig {path}: {message}")]
    Kubeconfig {
        /// The kubeconfig file.
        path: PathBuf,
        /// The reason.
        message: String,
    },
    /// The `--role` settings are inconsistent (e.g. an operator without `--server`).
    #[error("{0}")]
    Role(String),
    /// Binding or serving failed.
    #[error("cannot serve on {addr}: {source}")]
    Io {
        /// The listen address.
        addr: SocketAddr,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// A bound, ready server.
pub struct Server {
    listener: tokio::net::TcpListener,
    state: AppState,
    probe_interval: Duration,
    /// The address actually bound (useful with port 0).
    pub addr: SocketAddr,
    /// The admin password, if it was generated at this start (print it once).
    pub generated_admin_password: Option<String>,
}

/// Sets the admin password from `password`, or generates one if no admin exists yet.
/// Returns the generated password.
pub async fn ensure_admin(
    store: &Store,
    password: Option<&str>,
) -> Result<Option<String>, ServeError> {
    let generated = match password.filter(|p| !p.is_empty()) {
        Some(password) => {
            let hash = auth::hash_password(password)?;
            store
                .upsert_user(auth::ADMIN_USER, &hash, &now_rfc3339())
                .await?;
            return Ok(None);
        }
        None if store.password_hash(auth::ADMIN_USER).await?.is_some() => return Ok(None),
        None => auth::random_secret(18)?,
    };
    let hash = auth::hash_password(&generated)?;
    store
        .upsert_user(auth::ADMIN_USER, &hash, &now_rfc3339())
        .await?;
    Ok(Some(generated))
}

/// The extra Git CA roots of `options`, read once at start.
fn git_ca(options: &ServeOptions) -> Result<Option<Arc<Vec<u8>>>, ServeError> {
    options
        .git_ca_file
        .as_ref()
        .map(|path| {
            std::fs::read(path)
                .map(Arc::new)
                .map_err(|source| ServeError::GitCa {
                    path: path.clone(),
                    source,
                })
        })
        .transpose()
}

impl Server {
    /// Opens the store, sets up the admin user and binds the listener.
    pub async fn bind(options: ServeOptions, sealer: Sealer) -> Result<Server, ServeError> {
        let store = Store::open(&options.data_dir, options.database_url.as_deref()).await?;
        let generated_admin_password =
            ensure_admin(&store, options.admin_password.as_deref()).await?;
        let throttles = Arc::new(Throttles::new(
            options.scheduling.cluster_qps,
            options.scheduling.cluster_burst,
        ));
        let repositories = Arc::new(Repositories::new(store.clone(), sealer.clone()));
        let registry = Arc::new(
            Registry::new(store, sealer, options.probe_timeout)
                .with_throttles(Arc::clone(&throttles)),
        );
        // Git mirrors live under the data directory; fetches use the registered credentials.
        let (poller, updates) = Poller::with_provider(
            PollerConfig::new(GitSettings {
                data_dir: options.data_dir.clone(),
                extra_roots_pem: git_ca(&options)?,
            }),
            repositories.clone(),
        );
        let mut resolver = Resolver::new(
            ClusterSource::Local(Arc::clone(&registry)),
            options.probe_timeout,
        )
        .with_throttles(throttles);
        let management = role::management_client(
            options.management_kubeconfig.as_deref(),
            options.probe_timeout,
        )
        .await?;
        if let Some(client) = &management {
            resolver = resolver.with_management(client.clone());
        }
        let runner = Runner::new(
            resolver,
            options.pipeline.clone(),
            poller.clone(),
            Some(registry.store().clone()),
            options.scheduling.clone(),
        );
        runner.restore().await?;
        if options.reconcile_apps {
            if let Some(client) = management {
                runner.watch_resources(client, options.app_namespaces.clone());
            }
            if let Some(dir) = &options.apps_dir {
                runner.watch_apps_dir(dir).await?;
            }
        }
        let webhook = WebhookState {
            poller,
            secrets: Arc::new(
                WebhookSecrets::new(options.webhook_secret.as_deref())
                    .with_provider(repositories.clone()),
            ),
        };
        let state = AppState::new(
            registry,
            options.internal_token.as_deref(),
            webhook.clone(),
            Arc::clone(&runner),
            repositories,
        );
        let listener = tokio::net::TcpListener::bind(options.listen)
            .await
            .map_err(|source| ServeError::Io {
                addr: options.listen,
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| ServeError::Io {
            addr: options.listen,
            source,
        })?;
        runner.start(updates);
        Ok(Server {
            listener,
            state,
            probe_interval: options.probe_interval,
            addr,
            generated_admin_password,
        })
    }

    /// The registry behind the server (for in-process consumers such as the reconciler).
    pub fn registry(&self) -> &Arc<Registry> {
        self.state.registry()
    }

    /// The App runner (statuses of the Apps loaded from `--apps`).
    pub fn runner(&self) -> &Arc<Runner> {
        self.state.runner()
    }

    /// Serves until `shutdown` completes, probing clusters in the background.
    pub async fn run(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServeError> {
        let prober =
            tokio::spawn(Arc::clone(self.state.registry()).probe_loop(self.probe_interval));
        tracing::info!(addr = %self.addr, "wardn API listening");
        let result = axum::serve(self.listener, router(self.state.clone()))
            .with_graceful_shutdown(shutdown)
            .await;
        prober.abort();
        self.state.runner().shutdown().await;
        self.state.store().close().await;
        result.map_err(|source| ServeError::Io {
            addr: self.addr,
            source,
        })
    }
}
