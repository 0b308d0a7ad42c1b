//! A cluster's connection status as probes find it, and the board of the latest result per
//! cluster that the registry's API answers from (filled by [`super::probes`]).

use std::collections::HashMap;

use parking_lot::RwLock;
use serde::{Deserialize, Serialize};

use super::connect::{ConnectError, Connectivity, ProbeReport};

/// The longest error text a probe result keeps, in bytes (a cluster's answer may be quoted in
/// it). Escaped as JSON it takes at most six times that, within
/// [`MAX_STATUS_BYTES`](crate::store::probes::MAX_STATUS_BYTES).
const MAX_ERROR_BYTES: usize = 1024;

/// The outcome of a connection test (and the status board's value per cluster).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "ClusterStatus")]
pub struct Status {
    /// Connected or not.
    pub status: Connectivity,
    /// API server version, when connected.
    pub version: Option<String>,
    /// Node count, when connected.
    pub node_count: Option<u64>,
    /// The cause of the last failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Status {
    /// The status of a cluster no probe has reached yet.
    pub(super) fn pending() -> Status {
        Status {
            status: Connectivity::Disconnected,
            version: None,
            node_count: None,
            error: Some("not probed yet".to_string()),
        }
    }

    /// The status a probe's outcome shows, its error text bounded ([`Status::bounded`]).
    pub(super) fn from_probe(result: Result<ProbeReport, ConnectError>) -> Status {
        let status = match result {
            Ok(report) => Status {
                status: Connectivity::Connected,
                version: Some(report.version),
                node_count: Some(report.node_count),
                error: None,
            },
            Err(err) => Status {
                status: Connectivity::Disconnected,
                version: None,
                node_count: None,
                error: Some(err.to_string()),
            },
        };
        status.bounded()
    }

    /// This status with its error text cut to [`MAX_ERROR_BYTES`] (at a character boundary):
    /// the error may quote a cluster's answer, and results are stored and shown.
    fn bounded(mut self) -> Status {
        if let Some(error) = &mut self.error
            && error.len() > MAX_ERROR_BYTES
        {
            let end = (0..=MAX_ERROR_BYTES)
                .rev()
                .find(|&i| error.is_char_boundary(i))
                .unwrap_or(0);
            error.truncate(end);
        }
        self
    }
}

/// A probe result and when it was taken.
#[derive(Debug, Clone)]
struct Probed {
    status: Status,
    at_ms: i64,
}

/// The latest probe result of each cluster, this process's own or read from the store.
#[derive(Debug, Default)]
pub struct Statuses(RwLock<HashMap<String, Probed>>);

impl Statuses {
    /// The latest result for `name`, if any.
    pub(super) fn get(&self, name: &str) -> Option<Status> {
        self.0.read().get(name).map(|probed| probed.status.clone())
    }

    /// Keeps `status` for `name` unless a later result is kept already.
    pub(super) fn put(&self, name: &str, status: Status, at_ms: i64) {
        let mut board = self.0.write();
        match board.get_mut(name) {
            Some(kept) if kept.at_ms > at_ms => {}
            Some(kept) => *kept = Probed { status, at_ms },
            None => {
                board.insert(name.to_string(), Probed { status, at_ms });
            }
        }
    }

    /// Forgets `name`'s result.
    pub(super) fn remove(&self, name: &str) {
        self.0.write().remove(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::probes::MAX_STATUS_BYTES;

    #[test]
    fn a_hostile_error_text_is_cut_at_a_character_boundary_and_fits_the_store() {
        for unit in ["é", "\u{1}", "€", "𝄞", "\\"] {
            let status = Status {
                error: Some(unit.repeat(5000)),
                ..Status::pending()
            }
            .bounded();
            let error = status.error.clone().unwrap();
            assert!(error.len() <= MAX_ERROR_BYTES && error.len() > MAX_ERROR_BYTES - 4);
            assert!(error.chars().all(|c| unit.starts_with(c)));
            let json = serde_json::to_string(&status).unwrap();
            assert!(
                json.len() <= MAX_STATUS_BYTES,
                "{unit:?}: {} bytes",
                json.len()
            );
        }
    }
}
