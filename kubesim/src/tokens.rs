//! The bearer tokens of one cluster: admin, one per namespace, and an always-expired one.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::util::random_token;

/// The bearer tokens of one cluster, as written to `<name>.tokens.json`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Tokens {
    /// Full access.
    pub admin: String,
    /// Per namespace: a token allowed everything inside that namespace and nothing else.
    pub namespaced: BTreeMap<String, String>,
    /// A token the server always rejects with 401 (as an expired token).
    pub expired: String,
}

impl Tokens {
    /// Fresh random tokens for the admin, each namespace, and the expired token.
    pub fn generate(namespaces: &[String]) -> Tokens {
        Tokens {
            admin: random_token(),
            namespaced: namespaces
                .iter()
                .map(|ns| (ns.clone(), random_token()))
                .collect(),
            expired: random_token(),
        }
    }
}
