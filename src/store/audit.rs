//! The audit log: every mutation is recorded with actor, action, target, outcome and time.
//! Entries form a SHA-256 hash chain (each entry hashes its predecessor's hash), and the
//! newest hash is kept as the head, so [`verify`] detects a changed, inserted or deleted entry.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{Store, StoreError};
use crate::time::now_rfc3339;

/// The `prev_hash` of the first entry.
pub const GENESIS_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The most characters an entry keeps of each field (actor, action, target, outcome): they
/// are partly caller-supplied (an invalid name, an error quoting input), so entries stay
/// bounded. Longer values are cut at a character boundary.
pub const MAX_FIELD_CHARS: usize = 253;

/// `field` cut to at most [`MAX_FIELD_CHARS`] characters.
pub fn bounded(field: &str) -> &str {
    match field.char_indices().nth(MAX_FIELD_CHARS) {
        Some((end, _)) => &field[..end],
        None => field,
    }
}

/// What happened, before it is chained; never carries secret material.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEntry {
    /// Who did it: a username, or `token:NAME` for API tokens.
    pub actor: String,
    /// The action, e.g. `cluster.register`.
    pub action: String,
    /// What it was done to, e.g. a cluster name.
    pub target: String,
    /// `success`, or `failure: REASON`.
    pub outcome: String,
}

/// One stored, chained audit entry (read with `query_as`: its fields are the columns).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, sqlx::FromRow)]
pub struct Entry {
    /// Position in the chain, from 1.
    pub seq: i64,
    /// When (RFC 3339).
    pub at: String,
    /// Who.
    pub actor: String,
    /// What action.
    pub action: String,
    /// On what.
    pub target: String,
    /// With which result.
    pub outcome: String,
    /// Hash of the previous entry ([`GENESIS_HASH`] for the first).
    pub prev_hash: String,
    /// Hash of this entry's fields and `prev_hash`.
    pub hash: String,
}

/// The newest entry's position and hash, stored apart from the entries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, sqlx::FromRow)]
pub struct Head {
    /// Sequence number of the newest entry.
    pub seq: i64,
    /// Its hash.
    pub hash: String,
}

/// Why a chain failed verification.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChainError {
    /// An entry's fields no longer match its hash.
    #[error("audit entry {seq} was changed: its hash does not match its contents")]
    Changed {
        /// The entry.
        seq: i64,
    },
    /// Sequence numbers or links are broken: an entry was deleted or inserted.
    #[error("audit entry before {seq} is missing or was replaced (chain broken)")]
    Broken {
        /// The first entry after the break.
        seq: i64,
    },
    /// The newest entries were deleted: the head points past the last entry.
    #[error(
        "audit log ends at entry {last} but its head records entry {head}: entries were deleted"
    )]
    Truncated {
        /// The last entry present.
        last: i64,
        /// The head's sequence number.
        head: i64,
    },
}

/// The hash of an entry: SHA-256 hex over its fields and the previous hash, as a JSON array.
pub fn entry_hash(seq: i64, at: &str, fields: &NewEntry, prev_hash: &str) -> String {
    let canonical = serde_json::json!([
        seq,
        at,
        fields.actor,
        fields.action,
        fields.target,
        fields.outcome,
        prev_hash
    ]);
    hex::encode(Sha256::digest(canonical.to_string().as_bytes()))
}

/// Checks that `entries` (in order) form an unbroken chain ending at `head`.
pub fn verify(entries: &[Entry], head: Option<&Head>) -> Result<(), ChainError> {
    let mut prev_hash = GENESIS_HASH;
    for (index, entry) in entries.iter().enumerate() {
        let expected_seq = index as i64 + 1;
        if entry.seq != expected_seq || entry.prev_hash != prev_hash {
            return Err(ChainError::Broken { seq: entry.seq });
        }
        let fields = NewEntry {
            actor: entry.actor.clone(),
            action: entry.action.clone(),
            target: entry.target.clone(),
            outcome: entry.outcome.clone(),
        };
        if entry_hash(entry.seq, &entry.at, &fields, &entry.prev_hash) != entry.hash {
            return Err(ChainError::Changed { seq: entry.seq });
        }
        prev_hash = &entry.hash;
    }
    let last = entries.last().map_or(0, |e| e.seq);
    match head {
        Some(head) if head.seq != last => Err(ChainError::Truncated {
            last,
            head: head.seq,
        }),
        Some(head) if head.hash != prev_hash => Err(ChainError::Changed { seq: head.seq }),
        None if last != 0 => Err(ChainError::Truncated { last, head: 0 }),
        _ => Ok(()),
    }
}

impl NewEntry {
    /// The entry with every field cut to [`MAX_FIELD_CHARS`] characters.
    pub fn bounded(&self) -> NewEntry {
        NewEntry {
            actor: bounded(&self.actor).to_string(),
            action: bounded(&self.action).to_string(),
            target: bounded(&self.target).to_string(),
            outcome: bounded(&self.outcome).to_string(),
        }
    }
}

impl Store {
    /// Appends an entry at time `at` (RFC 3339), chaining it to the current head. Each field
    /// is stored cut to [`MAX_FIELD_CHARS`] characters (see [`NewEntry::bounded`]).
    pub async fn append_audit(&self, fields: &NewEntry, at: &str) -> Result<Entry, StoreError> {
        let fields = &fields.bounded();
        let _guard = self.audit_lock.lock().await;
        let mut tx = self.begin_write().await?;
        let head: Option<Head> = sqlx::query_as("SELECT seq, hash FROM audit_head WHERE id = 1")
            .fetch_optional(&mut *tx)
            .await?;
        let (prev_seq, prev_hash) = match head {
            Some(head) => (head.seq, head.hash),
            None => (0, GENESIS_HASH.to_string()),
        };
        let seq = prev_seq + 1;
        let hash = entry_hash(seq, at, fields, &prev_hash);
        sqlx::query(
            "INSERT INTO audit_log (seq, at, actor, action, target, outcome, prev_hash, hash) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(seq)
        .bind(at)
        .bind(&fields.actor)
        .bind(&fields.action)
        .bind(&fields.target)
        .bind(&fields.outcome)
        .bind(&prev_hash)
        .bind(&hash)
        .execute(&mut *tx)
        .await?;
        let moved = sqlx::query("UPDATE audit_head SET seq = $1, hash = $2 WHERE id = 1")
            .bind(seq)
            .bind(&hash)
            .execute(&mut *tx)
            .await?;
        if moved.rows_affected() == 0 {
            sqlx::query("INSERT INTO audit_head (id, seq, hash) VALUES (1, $1, $2)")
                .bind(seq)
                .bind(&hash)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(Entry {
            seq,
            at: at.to_string(),
            actor: fields.actor.clone(),
            action: fields.action.clone(),
            target: fields.target.clone(),
            outcome: fields.outcome.clone(),
            prev_hash,
            hash,
        })
    }

    /// Every audit entry in order, and the recorded head.
    pub async fn audit_log(&self) -> Result<(Vec<Entry>, Option<Head>), StoreError> {
        let entries = sqlx::query_as(
            "SELECT seq, at, actor, action, target, outcome, prev_hash, hash FROM audit_log ORDER BY seq",
        )
        .fetch_all(&self.pool)
        .await?;
        let head = sqlx::query_as("SELECT seq, hash FROM audit_head WHERE id = 1")
            .fetch_optional(&self.pool)
            .await?;
        Ok((entries, head))
    }
}

impl Store {
    /// Appends an entry, logging (not returning) a failure: audit writes must not turn a
    /// completed operation into an error answer.
    pub async fn record_audit(
        &self,
        actor: &str,
        action: &str,
        target: &str,
        outcome: &str,
        at: &str,
    ) {
        let entry = NewEntry {
            actor: actor.to_string(),
            action: action.to_string(),
            target: target.to_string(),
            outcome: outcome.to_string(),
        };
        if let Err(err) = self.append_audit(&entry, at).await {
            let (action, target) = (bounded(action), bounded(target));
            tracing::error!(%err, action, target, "cannot write audit entry");
        }
    }

    /// Records the end of an audited operation now, as `success` or `failure: ERROR`, and
    /// returns its `result` unchanged. Every field is bounded (see [`MAX_FIELD_CHARS`]).
    pub async fn audited<T, E: std::fmt::Display>(
        &self,
        actor: &str,
        action: &str,
        target: &str,
        result: Result<T, E>,
    ) -> Result<T, E> {
        let outcome = match &result {
            Ok(_) => "success".to_string(),
            Err(err) => format!("failure: {err}"),
        };
        self.record_audit(actor, action, target, &outcome, &now_rfc3339())
            .await;
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_cuts_at_a_character_boundary() {
        assert_eq!(bounded("short"), "short");
        let exact = "x".repeat(MAX_FIELD_CHARS);
        assert_eq!(bounded(&exact), exact);
        let wide = "é".repeat(MAX_FIELD_CHARS + 10);
        assert_eq!(bounded(&wide).chars().count(), MAX_FIELD_CHARS);
        assert_eq!(bounded(&wide), "é".repeat(MAX_FIELD_CHARS));
    }

    #[tokio::test]
    async fn audited_bounds_every_field_and_keeps_the_chain_valid() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), None).await.unwrap();
        let long = |c: &str| c.repeat(MAX_FIELD_CHARS + 50);
        let ok: Result<(), String> = store
            .audited(&long("a"), &long("b"), &long("t"), Ok(()))
            .await;
        assert_eq!(ok, Ok(()));
        let failed: Result<(), String> = store
            .audited("admin", "x.remove", "n", Err(long("e")))
            .await;
        assert_eq!(failed, Err(long("e")), "the result is returned unchanged");
        let (entries, head) = store.audit_log().await.unwrap();
        let cut = |c: &str| c.repeat(MAX_FIELD_CHARS);
        assert_eq!(entries[0].actor, cut("a"));
        assert_eq!(entries[0].action, cut("b"));
        assert_eq!(entries[0].target, cut("t"));
        assert_eq!(entries[0].outcome, "success");
        let outcome = format!("failure: {}", long("e"));
        assert_eq!(entries[1].outcome, bounded(&outcome));
        assert_eq!(entries[1].outcome.chars().count(), MAX_FIELD_CHARS);
        verify(&entries, head.as_ref()).unwrap();
        store.close().await;
    }
}
