//! `wardn repos add|rotate|list|rm|reseal`: Git repository credentials and webhook secrets, through
//! the repositories API. Secrets are read from stdin only (never from arguments, which other
//! users can see in the process list): the password or token on the first line, the webhook
//! secret on the next (or the first, when it is the only secret asked for).

use std::io::BufRead;
use std::path::PathBuf;

use reqwest::Method;
use serde_json::{Map, Value};

use super::client::{ApiClient, CliError, ConnectionArgs};
use crate::sources::repositories::{RepositoryView, repository_id};

/// The secrets flags shared by `add` and `rotate`.
#[derive(Debug, Clone, clap::Args)]
pub struct SecretArgs {
    /// User name for HTTP basic authentication (with --password-stdin).
    #[arg(long)]
    pub username: Option<String>,
    /// Read the password (basic authentication) from stdin.
    #[arg(long, conflicts_with = "token_stdin")]
    pub password_stdin: bool,
    /// Read a bearer token from stdin.
    #[arg(long)]
    pub token_stdin: bool,
    /// Read the repository's webhook secret from stdin (after the password or token).
    #[arg(long)]
    pub webhook_secret_stdin: bool,
}

/// `wardn repos` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum ReposCommand {
    /// Register credentials and/or a webhook secret for a repository.
    Add {
        /// Repository URL (any spelling: `…/repo`, `…/repo.git` and `…/repo/` are one).
        url: String,
        #[command(flatten)]
        secrets: SecretArgs,
    },
    /// Replace a repository's credentials and/or webhook secret.
    Rotate {
        /// Repository URL.
        url: String,
        #[command(flatten)]
        secrets: SecretArgs,
    },
    /// List registered repositories (never their secrets).
    List,
    /// Remove a repository's registration.
    Rm {
        /// Repository URL.
        url: String,
    },
    /// Rewrite every sealed repository secret under the server's current key (after a key
    /// rotation).
    Reseal,
}

/// Reads `count` lines from stdin, without their line endings.
fn stdin_lines(count: usize) -> Result<Vec<String>, CliError> {
    let stdin = std::io::stdin();
    let mut lines = Vec::with_capacity(count);
    for _ in 0..count {
        let mut line = String::new();
        let read = stdin
            .lock()
            .read_line(&mut line)
            .map_err(|source| CliError::File {
                path: PathBuf::from("<stdin>"),
                source,
            })?;
        if read == 0 {
            return Err(CliError::Failed(format!(
                "stdin ended after {} of {count} secret line(s)",
                lines.len()
            )));
        }
        lines.push(line.trim_end_matches(['\r', '\n']).to_string());
    }
    Ok(lines)
}

/// The JSON body for `secrets` (reading stdin as the flags ask).
fn body(secrets: &SecretArgs) -> Result<Map<String, Value>, CliError> {
    let auth_field = if secrets.password_stdin {
        Some("password")
    } else if secrets.token_stdin {
        Some("token")
    } else {
        None
    };
    let count = usize::from(auth_field.is_some()) + usize::from(secrets.webhook_secret_stdin);
    let mut lines = stdin_lines(count)?.into_iter();
    let mut body = Map::new();
    if let Some(username) = &secrets.username {
        body.insert("username".into(), Value::String(username.clone()));
    }
    if let Some(field) = auth_field
        && let Some(secret) = lines.next()
    {
        body.insert(field.into(), Value::String(secret));
    }
    if let Some(secret) = lines.next() {
        body.insert("webhook_secret".into(), Value::String(secret));
    }
    Ok(body)
}

fn id(url: &str) -> Result<String, CliError> {
    repository_id(url).map_err(|e| CliError::Failed(e.to_string()))
}

/// The repositories as an aligned table.
pub fn table(views: &[RepositoryView]) -> String {
    let mut rows = vec![vec![
        "ID".to_string(),
        "URL".to_string(),
        "AUTH".to_string(),
        "WEBHOOK-SECRET".to_string(),
        "CREATED".to_string(),
    ]];
    for v in views {
        rows.push(vec![
            v.id.clone(),
            v.url.clone(),
            v.auth.clone(),
            if v.has_webhook_secret { "yes" } else { "no" }.to_string(),
            v.created_at.clone(),
        ]);
    }
    super::table::render(&rows)
}

/// Runs a `wardn repos` subcommand.
pub async fn repos(connection: &ConnectionArgs, command: ReposCommand) -> Result<(), CliError> {
    let client = ApiClient::from_args(connection)?;
    match command {
        ReposCommand::Add { url, secrets } => {
            let mut body = body(&secrets)?;
            body.insert("url".into(), Value::String(url));
            let view: RepositoryView = client
                .call(
                    Method::POST,
                    "/api/v1/repositories",
                    Some(&Value::Object(body)),
                )
                .await?;
            println!(
                "repository {} registered (id {}, auth {})",
                view.url, view.id, view.auth
            );
        }
        ReposCommand::Rotate { url, secrets } => {
            let path = format!("/api/v1/repositories/{}", id(&url)?);
            let body = Value::Object(body(&secrets)?);
            let view: RepositoryView = client.call(Method::PUT, &path, Some(&body)).await?;
            println!("repository {} updated (auth {})", view.url, view.auth);
        }
        ReposCommand::List => {
            let list: Value = client
                .call(Method::GET, "/api/v1/repositories", None)
                .await?;
            let views: Vec<RepositoryView> = serde_json::from_value(list["repositories"].clone())
                .map_err(|err| CliError::Decode {
                what: "repository list".into(),
                reason: err.to_string(),
            })?;
            println!("{}", table(&views));
        }
        ReposCommand::Rm { url } => {
            let path = format!("/api/v1/repositories/{}", id(&url)?);
            let _: Value = client.call(Method::DELETE, &path, None).await?;
            println!("repository {url} removed");
        }
        ReposCommand::Reseal => {
            let answer: Value = client
                .call(Method::POST, "/api/v1/repositories/reseal", None)
                .await?;
            println!("{} repositories resealed", answer["resealed"]);
        }
    }
    Ok(())
}
