//! The client subcommands: `login`, `tokens create|list|revoke`,
//! `clusters add|list|get|test|rm|reseal|bootstrap|validate|check` and `audit verify`.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use reqwest::Method;
use serde_json::{Value, json};

use super::client::{
    ApiClient, CliError, ConnectionArgs, SavedCredentials, save_credentials, send,
};
use super::git_args::GitArgs;
use super::{cluster_apps, generate};
use kube::config::{KubeConfigOptions, Kubeconfig};

use crate::clusters::bootstrap::{self, BootstrapPlan};
use crate::clusters::connect::Connectivity;
use crate::clusters::registry::ClusterView;
use crate::clusters::status::Status;
use crate::store::audit::{self, Head};
use crate::store::users::Role;

/// Arguments of `wardn login`.
#[derive(Debug, clap::Args)]
pub struct LoginArgs {
    /// wardn server URL, e.g. http://localhost:8080.
    #[arg(long, env = "WARDN_SERVER")]
    pub server: String,
    /// User name.
    #[arg(long, default_value = "admin")]
    pub username: String,
    /// Read the password from the first line of stdin (otherwise from WARDN_PASSWORD).
    #[arg(long)]
    pub password_stdin: bool,
}

/// `wardn login`: logs in, creates an API token for this machine and saves server and token.
pub async fn login(args: LoginArgs) -> Result<(), CliError> {
    let password = if args.password_stdin {
        let mut line = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut line)
            .map_err(|source| CliError::File {
                path: PathBuf::from("<stdin>"),
                source,
            })?;
        line.trim_end_matches(['\r', '\n']).to_string()
    } else {
        std::env::var("WARDN_PASSWORD").map_err(|_| {
            CliError::NotConfigured(
                "no password: pass --password-stdin or set WARDN_PASSWORD".into(),
            )
        })?
    };
    let server = args.server.trim_end_matches('/').to_string();
    let http = reqwest::Client::new();
    let response = http
        .post(format!("{server}/api/v1/auth/login"))
        .json(&json!({"username": args.username, "password": password}))
        .send()
        .await
        .map_err(|source| CliError::Http {
            server: server.clone(),
            source,
        })?;
    if !response.status().is_success() {
        return Err(CliError::Api {
            status: response.status(),
            message: "invalid username or password".into(),
        });
    }
    let cookie = response
        .headers()
        .get(reqwest::header::SET_COOKIE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(str::to_string)
        .ok_or_else(|| CliError::Failed("the server set no session cookie".into()))?;
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "cli".into());
    let created: Value = send(
        http.post(format!("{server}/api/v1/tokens"))
            .header(reqwest::header::COOKIE, cookie)
            .json(&json!({"name": format!("wardn login ({host})")})),
        &server,
    )
    .await?;
    let token = created["token"]
        .as_str()
        .ok_or_else(|| CliError::Failed("the server returned no token".into()))?
        .to_string();
    let path = save_credentials(&SavedCredentials { server, token })?;
    println!("logged in; credentials saved to {}", path.display());
    Ok(())
}

/// `wardn tokens` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum TokensCommand {
    /// Create an API token (printed once).
    Create {
        /// A label for the token.
        name: String,
        /// Time to live, e.g. 30d, 12h, 15m (default 90d, at most 365d).
        #[arg(long)]
        ttl: Option<String>,
        /// The most the token may do: viewer, deployer, approver or admin, no higher than your
        /// own role (default: your role).
        #[arg(long)]
        role: Option<Role>,
    },
    /// List your API tokens (id, name, created, last used, expiry; never the secret).
    List,
    /// Revoke an API token by its id (as `tokens list` shows it).
    Revoke {
        /// The token's id.
        id: String,
    },
}

/// Runs a `wardn tokens` subcommand.
pub async fn tokens(connection: &ConnectionArgs, command: TokensCommand) -> Result<(), CliError> {
    let client = ApiClient::from_args(connection)?;
    match command {
        TokensCommand::Create { name, ttl, role } => {
            let mut body = json!({ "name": name });
            if let Some(ttl) = ttl {
                body["ttl"] = Value::String(ttl);
            }
            if let Some(role) = role {
                body["role"] = json!(role);
            }
            let created: Value = client
                .call(Method::POST, "/api/v1/tokens", Some(&body))
                .await?;
            println!("{}", created["token"].as_str().unwrap_or_default());
            eprintln!(
                "id {}, role {}, expires {}",
                created["id"].as_str().unwrap_or("?"),
                created["role"].as_str().unwrap_or("?"),
                created["expires_at"].as_str().unwrap_or("?")
            );
        }
        TokensCommand::List => {
            let listed: Value = client.call(Method::GET, "/api/v1/tokens", None).await?;
            print!("{}", tokens_table(&listed));
        }
        TokensCommand::Revoke { id } => {
            // The id goes into the path: refuse anything that is not an id before sending.
            if !crate::store::auth::is_token_id(&id) {
                return Err(CliError::Failed(format!(
                    "{id:?} is not an API token id (24 lowercase hex digits, as `wardn tokens list` shows)"
                )));
            }
            let _: Value = client
                .call(Method::DELETE, &format!("/api/v1/tokens/{id}"), None)
                .await?;
            println!("revoked {id}");
        }
    }
    Ok(())
}

/// The `wardn tokens list` table for a `GET /api/v1/tokens` answer.
fn tokens_table(listed: &Value) -> String {
    let text = |token: &Value, field: &str| token[field].as_str().unwrap_or("-").to_string();
    let mut rows = vec![
        ["ID", "NAME", "ROLE", "CREATED", "LAST USED", "EXPIRES"]
            .map(str::to_string)
            .to_vec(),
    ];
    for token in listed["tokens"].as_array().into_iter().flatten() {
        let mut expires = text(token, "expires_at");
        if token["expired"].as_bool() == Some(true) {
            expires.push_str(" (expired)");
        }
        rows.push(vec![
            text(token, "id"),
            text(token, "name"),
            text(token, "role"),
            text(token, "created_at"),
            text(token, "last_used_at"),
            expires,
        ]);
    }
    format!("{}\n", super::table::render(&rows))
}

/// `wardn clusters` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum ClustersCommand {
    /// Register a cluster.
    Add {
        /// Cluster name (a DNS label).
        name: String,
        /// API server URL (https://).
        #[arg(long)]
        server_url: String,
        /// Kubeconfig file with embedded credentials.
        #[arg(long)]
        kubeconfig: PathBuf,
        /// Namespace allowlist, comma-separated (default: every namespace).
        #[arg(long, value_delimiter = ',')]
        namespaces: Vec<String>,
        /// Accept a kubeconfig with `insecure-skip-tls-verify: true` (shown and audited).
        #[arg(long)]
        allow_insecure_tls: bool,
    },
    /// List clusters with their status.
    List,
    /// Show one cluster as JSON.
    Get {
        /// Cluster name.
        name: String,
    },
    /// Test a connection without registering anything.
    Test {
        /// API server URL (https://).
        #[arg(long)]
        server_url: String,
        /// Kubeconfig file.
        #[arg(long)]
        kubeconfig: PathBuf,
    },
    /// Remove a cluster.
    Rm {
        /// Cluster name.
        name: String,
    },
    /// Rewrite every sealed kubeconfig under the server's current key (after a key rotation).
    Reseal,
    /// Open a shell whose kubectl reaches the cluster through wardn (audited as
    /// `cluster.shell`): your own token, the cluster's sealed credentials, its namespace
    /// allowlist; writes need the admin role. `-- COMMAND` runs one command instead.
    Shell(super::shell::ShellArgs),
    /// Check App files against the registered clusters: every destination cluster is
    /// registered, its namespace allowed, and every rendered object lands in an allowed
    /// namespace. Prints each violation (file, App, field, reason); fails if there is any.
    Validate {
        /// Directory of App YAML files.
        #[arg(long, env = "WARDN_APPS_DIR")]
        apps: PathBuf,
        /// How the Apps' Git sources are fetched.
        #[command(flatten)]
        git: GitArgs,
    },
    /// Connect to clusters through the server and review (SelfSubjectAccessReview) what the
    /// stored credentials may do for the kinds the Apps routed there render. Fails on a denied
    /// review or an unreachable cluster.
    Check {
        /// Clusters to check, comma-separated (default: every registered cluster).
        #[arg(long, value_delimiter = ',')]
        clusters: Vec<String>,
        /// Directory of App YAML files whose kinds to review (default: connectivity only).
        #[arg(long, env = "WARDN_APPS_DIR")]
        apps: Option<PathBuf>,
        /// How the Apps' Git sources are fetched.
        #[command(flatten)]
        git: GitArgs,
    },
    /// Create a least-privilege ServiceAccount on a cluster of your kubeconfig (RBAC for the
    /// given kinds only, Roles in the allowed namespaces), then register the cluster with it.
    Bootstrap {
        /// Context of your kubeconfig that reaches the cluster with admin rights.
        #[arg(long)]
        context: String,
        /// Registry name for the cluster.
        #[arg(long)]
        name: String,
        /// Namespace for wardn's ServiceAccount and token Secret.
        #[arg(long, default_value = "wardn")]
        sa_namespace: String,
        /// Kinds wardn may manage, `Kind` or `group/Kind`, comma-separated (added to the kinds
        /// of `--apps`).
        #[arg(long, value_delimiter = ',', required_unless_present = "apps")]
        kinds: Vec<String>,
        /// Directory of App YAML files: grant the kinds the Apps routed to `--name` render,
        /// and (without `--namespaces`) allow the namespaces they deploy to.
        #[arg(long)]
        apps: Option<PathBuf>,
        /// Namespace allowlist; Roles are made only there (default: cluster-wide, or the
        /// Apps' namespaces with `--apps`).
        #[arg(long, value_delimiter = ',')]
        namespaces: Vec<String>,
        /// Kubeconfig file (default: KUBECONFIG, else ~/.kube/config).
        #[arg(long)]
        kubeconfig: Option<PathBuf>,
        /// How the Apps' Git sources are fetched.
        #[command(flatten)]
        git: GitArgs,
    },
}

fn read_file(path: &Path) -> Result<String, CliError> {
    std::fs::read_to_string(path).map_err(|source| CliError::File {
        path: path.to_path_buf(),
        source,
    })
}

fn pretty(value: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

/// Runs a `wardn clusters` subcommand.
pub async fn clusters(
    connection: &ConnectionArgs,
    command: ClustersCommand,
) -> Result<std::process::ExitCode, CliError> {
    let client = ApiClient::from_args(connection)?;
    match command {
        ClustersCommand::Shell(args) => return super::shell::run(client, args).await,
        ClustersCommand::Add {
            name,
            server_url,
            kubeconfig,
            namespaces,
            allow_insecure_tls,
        } => {
            let body = json!({"name": name, "server_url": server_url,
                              "kubeconfig": read_file(&kubeconfig)?, "namespaces": namespaces,
                              "allow_insecure_tls": allow_insecure_tls});
            let view: ClusterView = client
                .call(Method::POST, "/api/v1/clusters", Some(&body))
                .await?;
            println!("cluster {} registered", view.name);
        }
        ClustersCommand::List => {
            let list: Value = client.call(Method::GET, "/api/v1/clusters", None).await?;
            let views: Vec<ClusterView> = serde_json::from_value(list["clusters"].clone())
                .map_err(|err| CliError::Decode {
                    what: "cluster list".into(),
                    reason: err.to_string(),
                })?;
            println!("{}", table(&views));
        }
        ClustersCommand::Get { name } => {
            let view: Value = client
                .call(Method::GET, &format!("/api/v1/clusters/{name}"), None)
                .await?;
            println!("{}", pretty(&view));
        }
        ClustersCommand::Test {
            server_url,
            kubeconfig,
        } => {
            let body = json!({"server_url": server_url, "kubeconfig": read_file(&kubeconfig)?});
            let status: Status = client
                .call(Method::POST, "/api/v1/clusters/test", Some(&body))
                .await?;
            println!("{}", pretty(&status));
            if status.status == Connectivity::Disconnected {
                return Err(CliError::Failed(format!(
                    "disconnected: {}",
                    status.error.unwrap_or_default()
                )));
            }
        }
        ClustersCommand::Rm { name } => {
            let _: Value = client
                .call(Method::DELETE, &format!("/api/v1/clusters/{name}"), None)
                .await?;
            println!("cluster {name} removed");
        }
        ClustersCommand::Bootstrap {
            context,
            name,
            sa_namespace,
            kinds,
            apps,
            mut namespaces,
            kubeconfig,
            git,
        } => {
            let mut grants = Vec::new();
            if let Some(dir) = apps {
                let needs = generate::bootstrap_needs(&dir, &name, &git).await?;
                if let Some(error) = needs.errors.first() {
                    return Err(CliError::Failed(error.clone()));
                }
                grants = needs.grants;
                if namespaces.is_empty() {
                    namespaces = needs.namespaces;
                }
            }
            let plan = BootstrapPlan {
                name,
                sa_namespace,
                kinds,
                grants,
                namespaces,
            };
            run_bootstrap(&client, &context, kubeconfig.as_deref(), plan).await?;
        }
        ClustersCommand::Validate { apps, git } => {
            cluster_apps::validate(&client, &apps, &git).await?
        }
        ClustersCommand::Check {
            clusters,
            apps,
            git,
        } => cluster_apps::check(&client, &clusters, apps.as_deref(), &git).await?,
        ClustersCommand::Reseal => {
            let result: Value = client
                .call(Method::POST, "/api/v1/clusters/reseal", None)
                .await?;
            println!("resealed {} kubeconfig(s)", result["resealed"]);
            if let Some(n) = result["audit_rechained"].as_i64().filter(|n| *n > 0) {
                println!("re-chained {n} audit entries under the current key");
            }
        }
    }
    Ok(std::process::ExitCode::SUCCESS)
}

async fn run_bootstrap(
    api: &ApiClient,
    context: &str,
    kubeconfig: Option<&Path>,
    plan: BootstrapPlan,
) -> Result<(), CliError> {
    let failed =
        |what: &str, err: &dyn std::fmt::Display| CliError::Failed(format!("{what}: {err}"));
    let parsed = match kubeconfig {
        Some(path) => Kubeconfig::read_from(path),
        None => Kubeconfig::read(),
    }
    .map_err(|err| failed("kubeconfig", &err))?;
    let options = KubeConfigOptions {
        context: Some(context.to_string()),
        ..KubeConfigOptions::default()
    };
    let config = kube::Config::from_custom_kubeconfig(parsed, &options)
        .await
        .map_err(|err| failed(&format!("context {context}"), &err))?;
    let server_url = config
        .cluster_url
        .to_string()
        .trim_end_matches('/')
        .to_string();
    let client = kube::Client::try_from(config).map_err(|err| failed("client", &err))?;
    let identity = bootstrap::bootstrap(&client, &plan)
        .await
        .map_err(|err| failed("bootstrap", &err))?;
    let body = json!({"name": plan.name, "server_url": server_url,
                      "kubeconfig": bootstrap::kubeconfig(&plan.name, &server_url, &identity),
                      "namespaces": plan.namespaces});
    let view: ClusterView = api
        .call(Method::POST, "/api/v1/clusters", Some(&body))
        .await?;
    println!(
        "ServiceAccount {}/{} created; cluster {} registered",
        plan.sa_namespace,
        bootstrap::SERVICE_ACCOUNT,
        view.name
    );
    Ok(())
}

/// The `wardn clusters list` table.
pub fn table(views: &[ClusterView]) -> String {
    let mut rows = vec![vec![
        "NAME".to_string(),
        "STATUS".to_string(),
        "VERSION".to_string(),
        "NODES".to_string(),
        "SERVER".to_string(),
        "NAMESPACES".to_string(),
        "ERROR".to_string(),
    ]];
    for view in views {
        let status = match view.status.status {
            Connectivity::Connected => "connected",
            Connectivity::Disconnected => "disconnected",
        };
        rows.push(vec![
            view.name.clone(),
            status.to_string(),
            view.status.version.clone().unwrap_or_else(|| "-".into()),
            view.status.node_count.map_or("-".into(), |n| n.to_string()),
            view.server_url.clone(),
            if view.namespaces.is_empty() {
                "*".into()
            } else {
                view.namespaces.join(",")
            },
            view.status.error.clone().unwrap_or_default(),
        ]);
    }
    super::table::render(&rows)
}

/// `wardn audit` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum AuditCommand {
    /// Check the audit log's MAC chain where the audit key is: on the server (default), or
    /// offline on a database with `WARDN_CREDENTIALS_KEY` (`--data-dir` / `--database-url`).
    /// A changed, inserted or deleted entry fails, naming the first bad sequence number.
    Verify(VerifyArgs),
}

/// Arguments of `wardn audit verify`.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// A head recorded elsewhere (the `audit_seq`/`audit_mac` log line, the
    /// `wardn_audit_head_info` metric): the log must reach entry SEQ with this MAC, which
    /// detects deleted newest entries.
    #[arg(long, value_name = "SEQ:MAC")]
    pub expect_head: Option<Head>,
    /// Verify offline the SQLite database in this data directory (needs WARDN_CREDENTIALS_KEY).
    #[arg(long, value_name = "DIR", conflicts_with = "database_url")]
    pub data_dir: Option<PathBuf>,
    /// Verify offline this PostgreSQL (or sqlite:) database (needs WARDN_CREDENTIALS_KEY).
    #[arg(long, value_name = "URL")]
    pub database_url: Option<String>,
}

/// Runs a `wardn audit` subcommand.
pub async fn audit(connection: &ConnectionArgs, command: AuditCommand) -> Result<(), CliError> {
    match command {
        AuditCommand::Verify(args) => {
            let result = if args.data_dir.is_some() || args.database_url.is_some() {
                verify_offline(&args).await?
            } else {
                verify_online(connection, args.expect_head.as_ref()).await?
            };
            match result {
                Ok(verified) => {
                    let head = verified
                        .head
                        .map_or_else(|| "none (empty log)".to_string(), |head| head.to_string());
                    println!(
                        "audit log intact: {} entries, MAC chain verified under {}; head {head}",
                        verified.entries, verified.key
                    );
                    Ok(())
                }
                Err((seq, message)) => Err(CliError::Failed(format!(
                    "audit log verification FAILED at entry {seq}: {message}"
                ))),
            }
        }
    }
}

/// A verification: what verified, or the first bad sequence number and why.
type Verification = Result<audit::Verified, (i64, String)>;

async fn verify_online(
    connection: &ConnectionArgs,
    expect: Option<&Head>,
) -> Result<Verification, CliError> {
    let client = ApiClient::from_args(connection)?;
    let path = match expect {
        Some(head) => format!("/api/v1/audit/verify?expect_head={head}"),
        None => "/api/v1/audit/verify".to_string(),
    };
    let answer: Value = client.call(Method::GET, &path, None).await?;
    let decode = |reason: String| CliError::Decode {
        what: "audit verification".into(),
        reason,
    };
    if answer["intact"].as_bool() == Some(true) {
        let verified = serde_json::from_value(answer).map_err(|err| decode(err.to_string()))?;
        return Ok(Ok(verified));
    }
    let seq = answer["first_bad_seq"]
        .as_i64()
        .ok_or_else(|| decode("no first_bad_seq in a failed verification".into()))?;
    let message = answer["error"].as_str().unwrap_or("verification failed");
    Ok(Err((seq, message.to_string())))
}

async fn verify_offline(args: &VerifyArgs) -> Result<Verification, CliError> {
    let sealer =
        crate::seal::Sealer::from_env().map_err(|err| CliError::Failed(err.to_string()))?;
    let (current, previous) = sealer.audit_keys();
    let keys = audit::AuditKeys {
        current: audit::AuditKey::new(current),
        previous: previous.map(audit::AuditKey::new),
    };
    if let Some(dir) = &args.data_dir {
        let file = dir.join(crate::store::SQLITE_FILE);
        if !file.is_file() {
            return Err(CliError::Failed(format!(
                "{}: no wardn database here (expected {})",
                dir.display(),
                file.display()
            )));
        }
    }
    let data_dir = args.data_dir.clone().unwrap_or_default();
    let store = crate::store::Store::open(&data_dir, args.database_url.as_deref())
        .await
        .map_err(|err| CliError::Failed(err.to_string()))?;
    let result = store
        .verify_audit(&keys, args.expect_head.as_ref())
        .await
        .map_err(|err| CliError::Failed(err.to_string()));
    store.close().await;
    Ok(result?.map_err(|err| (err.seq(), err.to_string())))
}
