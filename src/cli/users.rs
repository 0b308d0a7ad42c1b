//! `wardn users create|list|set-role|delete`: the users API (admins only). A new user's
//! password is read from stdin with `--password-stdin` (never from arguments, which other
//! users can see in the process list); without it, one is generated and printed once.

use std::io::BufRead;
use std::path::PathBuf;

use reqwest::Method;
use serde_json::{Value, json};

use super::client::{ApiClient, CliError, ConnectionArgs};
use crate::server::auth::random_secret;
use crate::server::users::is_username;
use crate::store::users::{Role, User};

/// `wardn users` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum UsersCommand {
    /// Create a user with a role.
    Create {
        /// The user name (letters, digits, '.', '_', '@', '-').
        name: String,
        /// viewer, deployer, approver or admin.
        #[arg(long)]
        role: Role,
        /// Approvers only: the clusters they may approve on, comma-separated (default: all).
        #[arg(long, value_delimiter = ',')]
        clusters: Option<Vec<String>>,
        /// The user's email address (four-eyes approval matches commit authors by it).
        #[arg(long)]
        email: Option<String>,
        /// Read the password from the first line of stdin (otherwise one is generated and
        /// printed once).
        #[arg(long)]
        password_stdin: bool,
    },
    /// List users with their roles.
    List,
    /// Change a user's role (and an approver's clusters).
    SetRole {
        /// The user name.
        name: String,
        /// viewer, deployer, approver or admin.
        role: Role,
        /// Approvers only: the clusters they may approve on, comma-separated (default: all).
        #[arg(long, value_delimiter = ',')]
        clusters: Option<Vec<String>>,
    },
    /// Delete a user: its sessions end and its API tokens are revoked.
    Delete {
        /// The user name.
        name: String,
    },
}

/// `/api/v1/users/NAME`, refusing names that are not user names before anything is sent.
fn user_path(name: &str) -> Result<String, CliError> {
    if is_username(name) {
        Ok(format!("/api/v1/users/{name}"))
    } else {
        Err(CliError::Failed(format!(
            "{:?} is not a user name (letters, digits, '.', '_', '@' or '-')",
            name.chars().take(64).collect::<String>()
        )))
    }
}

fn read_password() -> Result<String, CliError> {
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|source| CliError::File {
            path: PathBuf::from("<stdin>"),
            source,
        })?;
    Ok(line.trim_end_matches(['\r', '\n']).to_string())
}

fn decode<T: serde::de::DeserializeOwned>(value: Value, what: &str) -> Result<T, CliError> {
    serde_json::from_value(value).map_err(|err| CliError::Decode {
        what: what.into(),
        reason: err.to_string(),
    })
}

/// A user's access as shown: `approver (clusters: a, b)`.
fn access(user: &User) -> String {
    match &user.clusters {
        Some(clusters) => format!("{} (clusters: {})", user.role, clusters.join(", ")),
        None => user.role.to_string(),
    }
}

/// The users as an aligned table.
pub fn table(users: &[User]) -> String {
    let mut rows = vec![
        ["NAME", "ROLE", "EMAIL", "CREATED"]
            .map(str::to_string)
            .to_vec(),
    ];
    for user in users {
        rows.push(vec![
            user.username.clone(),
            access(user),
            user.email.clone().unwrap_or_else(|| "-".into()),
            user.created_at.clone(),
        ]);
    }
    super::table::render(&rows)
}

/// Runs a `wardn users` subcommand.
pub async fn users(connection: &ConnectionArgs, command: UsersCommand) -> Result<(), CliError> {
    let client = ApiClient::from_args(connection)?;
    match command {
        UsersCommand::Create {
            name,
            role,
            clusters,
            email,
            password_stdin,
        } => {
            let (password, generated) = if password_stdin {
                (read_password()?, false)
            } else {
                let password =
                    random_secret(18).map_err(|err| CliError::Failed(err.to_string()))?;
                (password, true)
            };
            let body = json!({
                "username": name, "password": password, "role": role,
                "clusters": clusters, "email": email,
            });
            let user: User = decode(
                client
                    .call(Method::POST, "/api/v1/users", Some(&body))
                    .await?,
                "created user",
            )?;
            println!("user {} created ({})", user.username, access(&user));
            if generated {
                println!("password (shown once): {password}");
            }
        }
        UsersCommand::List => {
            let listed: Value = client.call(Method::GET, "/api/v1/users", None).await?;
            let users: Vec<User> = decode(listed["users"].clone(), "user list")?;
            println!("{}", table(&users));
        }
        UsersCommand::SetRole {
            name,
            role,
            clusters,
        } => {
            let mut body = json!({ "role": role });
            if let Some(clusters) = clusters {
                body["clusters"] = json!(clusters);
            }
            let user: User = decode(
                client
                    .call(Method::PATCH, &user_path(&name)?, Some(&body))
                    .await?,
                "updated user",
            )?;
            println!("user {} is now {}", user.username, access(&user));
        }
        UsersCommand::Delete { name } => {
            let _: Value = client
                .call(Method::DELETE, &user_path(&name)?, None)
                .await?;
            println!("user {name} deleted (its sessions ended, its API tokens revoked)");
        }
    }
    Ok(())
}
