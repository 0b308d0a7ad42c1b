//! Errors of the kubesim library API (starting, stopping and connecting to clusters).

/// Why a cluster could not be started, restarted or connected to.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Generating the CA or serving certificate, or building the TLS configuration, failed.
    #[error("TLS setup failed: {0}")]
    Tls(String),
    /// The listening socket could not be bound (e.g. the port is taken).
    #[error("cannot listen on 127.0.0.1:{port}: {source}")]
    Bind {
        /// The port that was asked for (0 = ephemeral).
        port: u16,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// Writing a kubeconfig or tokens file failed.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file that could not be written.
        path: String,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// Building a kube client from the generated kubeconfig failed.
    #[error("cannot build a kube client: {0}")]
    Client(String),
}
