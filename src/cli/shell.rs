//! `wardn clusters shell NAME [-- COMMAND…]`: opens a cluster shell session on the server,
//! writes a temporary kubeconfig (mode 0600, in a 0700 directory, removed on exit) whose server
//! is the session's proxy URL and whose token is the caller's own wardn token, runs `$SHELL`
//! (or COMMAND) with `KUBECONFIG` pointing at it, and ends the session when that exits. The
//! cluster's credentials never leave the server.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use base64::Engine;
use reqwest::Method;

use super::client::{ApiClient, CliError};
use crate::server::shell::OpenedSession;

/// `wardn clusters shell` arguments.
#[derive(Debug, clap::Args)]
pub struct ShellArgs {
    /// The registered cluster.
    pub name: String,
    /// PEM file of the CA that signed the wardn server's certificate (https servers whose
    /// certificate the system does not trust); kubectl and this command both trust it.
    #[arg(long, env = "WARDN_CA_FILE")]
    pub ca_file: Option<PathBuf>,
    /// Command to run instead of `$SHELL`, after `--` (e.g. `-- kubectl get pods -n demo`).
    #[arg(last = true)]
    pub command: Vec<String>,
}

/// The temporary directory holding the kubeconfig; removed when dropped.
struct TempKubeconfig {
    dir: PathBuf,
    file: PathBuf,
}

impl TempKubeconfig {
    /// Writes `text` to a fresh `wardn-shell-SESSION/kubeconfig` under the temp directory,
    /// readable by the owner only.
    fn write(session: &str, text: &str) -> Result<TempKubeconfig, CliError> {
        let dir = std::env::temp_dir().join(format!("wardn-shell-{session}"));
        let file = dir.join("kubeconfig");
        let error = |path: &Path| {
            let path = path.to_path_buf();
            move |source| CliError::File { path, source }
        };
        let mut builder = std::fs::DirBuilder::new();
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt;
            builder.mode(0o700);
        }
        builder.create(&dir).map_err(error(&dir))?;
        let guard = TempKubeconfig {
            dir,
            file: file.clone(),
        };
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let mut handle = options.open(&file).map_err(error(&file))?;
        std::io::Write::write_all(&mut handle, text.as_bytes()).map_err(error(&file))?;
        Ok(guard)
    }
}

impl Drop for TempKubeconfig {
    fn drop(&mut self) {
        if let Err(err) = std::fs::remove_dir_all(&self.dir) {
            tracing::warn!(dir = %self.dir.display(), error = %err, "cannot remove the shell's kubeconfig");
        }
    }
}

/// A kubeconfig reaching `cluster` through `server` (the proxy URL) with `token`, trusting
/// `ca_pem` when given (else the system's roots).
pub fn kubeconfig(cluster: &str, server: &str, token: &str, ca_pem: Option<&[u8]>) -> String {
    let ca = ca_pem.map_or(String::new(), |pem| {
        format!(
            "    certificate-authority-data: {}\n",
            base64::engine::general_purpose::STANDARD.encode(pem)
        )
    });
    // JSON strings are valid YAML scalars: no value can break out of its field.
    let quote = |text: &str| serde_json::Value::from(text).to_string();
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: wardn-{cluster}\n  cluster:\n    server: {server}\n{ca}\
         users:\n- name: wardn\n  user:\n    token: {token}\n\
         contexts:\n- name: wardn-{cluster}\n  context:\n    cluster: wardn-{cluster}\n    user: wardn\n\
         current-context: wardn-{cluster}\n",
        server = quote(server),
        token = quote(token),
    )
}

/// Runs `wardn clusters shell`; the exit code is the shell's (or the command's).
pub async fn run(client: ApiClient, args: ShellArgs) -> Result<ExitCode, CliError> {
    let ca_pem = args
        .ca_file
        .as_ref()
        .map(|path| {
            std::fs::read(path).map_err(|source| CliError::File {
                path: path.clone(),
                source,
            })
        })
        .transpose()?;
    let client = match &ca_pem {
        Some(pem) => client.trusting(pem)?,
        None => client,
    };
    let name = &args.name;
    let opened: OpenedSession = client
        .call(
            Method::POST,
            &format!("/api/v1/clusters/{name}/shell"),
            None,
        )
        .await?;
    let server = format!("{}{}", client.server(), opened.proxy_path);
    let config = kubeconfig(name, &server, client.token(), ca_pem.as_deref());
    let result = run_in_session(&opened, &config, &args.command).await;
    let ended: Result<serde_json::Value, CliError> = client
        .call(
            Method::DELETE,
            &format!("/api/v1/clusters/{name}/shell/{}", opened.session),
            None,
        )
        .await;
    if let Err(err) = ended {
        eprintln!(
            "warning: cannot end shell session {}: {err}",
            opened.session
        );
    }
    result
}

async fn run_in_session(
    opened: &OpenedSession,
    config: &str,
    command: &[String],
) -> Result<ExitCode, CliError> {
    let file = TempKubeconfig::write(&opened.session, config)?;
    let (program, arguments) = match command.split_first() {
        Some((program, arguments)) => (program.clone(), arguments.to_vec()),
        None => (
            std::env::var("SHELL").unwrap_or_else(|_| "/bin/sh".to_string()),
            Vec::new(),
        ),
    };
    if command.is_empty() {
        let reach = if opened.namespaces.is_empty() {
            "every namespace".to_string()
        } else {
            format!("namespaces {}", opened.namespaces.join(", "))
        };
        eprintln!(
            "wardn: shell on cluster {} ({reach}); session {} ends when this shell exits",
            opened.cluster, opened.session
        );
    }
    // Ctrl-C belongs to the shell: wardn waits, so it can end the session afterwards.
    let ignore_interrupts = tokio::spawn(async { while tokio::signal::ctrl_c().await.is_ok() {} });
    let status = tokio::process::Command::new(&program)
        .args(&arguments)
        .env("KUBECONFIG", &file.file)
        .env("WARDN_SHELL_CLUSTER", &opened.cluster)
        .status()
        .await;
    ignore_interrupts.abort();
    drop(file);
    let status =
        status.map_err(|err| CliError::Failed(format!("cannot run {program:?}: {err}")))?;
    Ok(match status.code() {
        Some(0) => ExitCode::SUCCESS,
        Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        None => ExitCode::FAILURE,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kubeconfig_quotes_its_values_and_embeds_the_ca() {
        let text = kubeconfig("c", "https://w/x", "wardn_a\"b\nc", Some(b"PEM"));
        let parsed: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
        assert_eq!(parsed["users"][0]["user"]["token"], "wardn_a\"b\nc");
        assert_eq!(parsed["clusters"][0]["cluster"]["server"], "https://w/x");
        assert_eq!(
            parsed["clusters"][0]["cluster"]["certificate-authority-data"],
            "UEVN"
        );
    }
}
