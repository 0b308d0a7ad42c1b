//! Logging set-up: human-readable text for terminals, JSON lines for log collectors; and the
//! Prometheus text of metrics registries, which `/metrics` concatenates.

use prometheus_client::registry::Registry;
use tracing_subscriber::EnvFilter;

/// How log lines are written to stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Installs the global tracing subscriber. The level comes from `RUST_LOG` (default `info`).
pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

/// The metrics of `registries`, one after the other, in the Prometheus text format.
pub fn prometheus_text(registries: &[&Registry]) -> String {
    let mut out = String::new();
    for registry in registries {
        // Writing to a `String` cannot fail.
        let _ = prometheus_client::encoding::prometheus_text::encode(&mut out, registry);
    }
    out
}
