//! The audit log: every mutation is recorded with actor, action, target, outcome and time.
//!
//! Entries form a chain of HMAC-SHA256 MACs: each entry's MAC covers its fields and its
//! predecessor's MAC, under the audit key derived from `WARDN_CREDENTIALS_KEY` (see
//! `seal::Sealer::audit_keys`). Whoever can write the database but does not hold the key cannot
//! change, insert or re-chain entries without [`verify`] naming the first bad one. Deleting
//! the newest entries (and moving the stored head) is caught by checking against a head
//! recorded elsewhere: every append logs `audit_seq` and `audit_mac`, `/metrics` exposes the
//! head, and verification accepts an expected head (`SEQ:MAC`).
//!
//! Logs written before the key existed (plain SHA-256 chains, [`ChainKey::Legacy`]) are
//! re-chained under the key at start-up when they verify intact ([`Store::init_audit`]); a
//! key rotation re-chains from the previous key to the current one ([`Store::rechain_audit`]).
//! Both are audited as `audit.rechain`.

use std::fmt;
use std::str::FromStr;

use hmac::{Hmac, Mac};
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

/// Entries read per query while verifying or re-chaining (the log is never loaded whole).
const SCAN_PAGE: i64 = 5_000;

/// The default and the largest number of entries one page of [`Store::audit_page`] returns.
pub const PAGE_DEFAULT: i64 = 100;
/// See [`PAGE_DEFAULT`].
pub const PAGE_MAX: i64 = 1_000;

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
    /// MAC of the previous entry ([`GENESIS_HASH`] for the first).
    pub prev_hash: String,
    /// HMAC-SHA256 (hex) of this entry's fields and `prev_hash` under the audit key.
    pub hash: String,
}

/// The newest entry's position and MAC. The database keeps one beside the entries; a copy
/// kept elsewhere (logs, metrics, an operator's note) is what detects deleted newest entries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, sqlx::FromRow)]
pub struct Head {
    /// Sequence number of the newest entry.
    pub seq: i64,
    /// Its MAC.
    pub hash: String,
}

impl fmt::Display for Head {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.seq, self.hash)
    }
}

/// A head given as text (`--expect-head`, `?expect_head=`) that is not `SEQ:MAC`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected audit head {text:?} is not SEQ:MAC (a sequence number ≥ 1 and 64 hex digits)")]
pub struct HeadParseError {
    /// The text given.
    pub text: String,
}

impl FromStr for Head {
    type Err = HeadParseError;

    fn from_str(text: &str) -> Result<Head, HeadParseError> {
        let err = || HeadParseError {
            text: text.chars().take(100).collect(),
        };
        let (seq, mac) = text.trim().split_once(':').ok_or_else(err)?;
        let seq: i64 = seq.parse().map_err(|_| err())?;
        if seq < 1 || mac.len() != 64 || !mac.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(err());
        }
        Ok(Head {
            seq,
            hash: mac.to_ascii_lowercase(),
        })
    }
}

/// A 32-byte audit chain key (derived from the credentials key; never the key itself).
#[derive(Clone, PartialEq, Eq)]
pub struct AuditKey([u8; 32]);

impl AuditKey {
    /// The key from its bytes.
    pub fn new(bytes: [u8; 32]) -> AuditKey {
        AuditKey(bytes)
    }
}

impl fmt::Debug for AuditKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AuditKey(..)")
    }
}

/// The audit keys of a process: the current one, and the previous one during a rotation.
#[derive(Debug, Clone)]
pub struct AuditKeys {
    /// Derived from `WARDN_CREDENTIALS_KEY`: new entries and re-chains use it.
    pub current: AuditKey,
    /// Derived from `WARDN_CREDENTIALS_KEY_PREVIOUS`: still verifies a chain not yet re-chained.
    pub previous: Option<AuditKey>,
}

/// How a chain's links are computed.
#[derive(Debug, Clone, Copy)]
pub enum ChainKey<'a> {
    /// HMAC-SHA256 under an audit key.
    Keyed(&'a AuditKey),
    /// Plain SHA-256, as written before audit keys existed (anyone can recompute it).
    Legacy,
}

/// Which key a verified chain is under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KeyUsed {
    /// The current key.
    Current,
    /// The previous key (a rotation not yet completed by a reseal).
    Previous,
    /// No key: a legacy SHA-256 chain.
    Legacy,
}

impl fmt::Display for KeyUsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            KeyUsed::Current => "the current key",
            KeyUsed::Previous => "the previous key",
            KeyUsed::Legacy => "legacy unkeyed SHA-256",
        })
    }
}

/// Why a chain failed verification; every variant names the first bad sequence number.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChainError {
    /// An entry's fields no longer match its MAC (changed, forged, or a wrong key).
    #[error(
        "audit entry {seq} was changed: its MAC does not match its contents under the audit key"
    )]
    Changed {
        /// The entry.
        seq: i64,
    },
    /// Sequence numbers or links are broken: an entry was deleted, inserted or replaced.
    #[error("audit entry {seq} is missing or was replaced (chain broken)")]
    Broken {
        /// The first entry missing or out of line.
        seq: i64,
    },
    /// The newest entries were deleted: a head points past the last entry.
    #[error(
        "audit entry {} is missing: the log ends at entry {last} but its head is entry {head} \
         (entries were deleted)",
        .last + 1
    )]
    Truncated {
        /// The last entry present.
        last: i64,
        /// The head's sequence number.
        head: i64,
    },
    /// The entry at an expected head carries another MAC: the log was rewritten from there on.
    #[error(
        "audit entry {seq} does not carry the expected head MAC: the log was rewritten or truncated and refilled"
    )]
    HeadMismatch {
        /// The expected head's sequence number.
        seq: i64,
    },
}

impl ChainError {
    /// The first bad sequence number.
    pub fn seq(&self) -> i64 {
        match self {
            ChainError::Changed { seq }
            | ChainError::Broken { seq }
            | ChainError::HeadMismatch { seq } => *seq,
            ChainError::Truncated { last, .. } => last + 1,
        }
    }
}

/// What an intact chain verified to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verified {
    /// How many entries were checked.
    pub entries: i64,
    /// The last entry's sequence number and MAC (`None` for an empty log).
    pub head: Option<Head>,
    /// The key the chain is under.
    pub key: KeyUsed,
}

/// The canonical text one link covers: a JSON array of the entry's fields and the previous MAC.
fn canonical(seq: i64, at: &str, fields: [&str; 4], prev_hash: &str) -> String {
    let [actor, action, target, outcome] = fields;
    serde_json::json!([seq, at, actor, action, target, outcome, prev_hash]).to_string()
}

/// The link of an entry under `key`: HMAC-SHA256 (or, for [`ChainKey::Legacy`], SHA-256) hex
/// of its canonical text.
pub fn entry_mac(
    key: ChainKey<'_>,
    seq: i64,
    at: &str,
    fields: &NewEntry,
    prev_hash: &str,
) -> String {
    link(
        key,
        seq,
        at,
        [
            &fields.actor,
            &fields.action,
            &fields.target,
            &fields.outcome,
        ],
        prev_hash,
    )
}

fn link(key: ChainKey<'_>, seq: i64, at: &str, fields: [&str; 4], prev_hash: &str) -> String {
    let text = canonical(seq, at, fields, prev_hash);
    match key {
        ChainKey::Keyed(key) => {
            // HMAC accepts keys of any length: this cannot fail.
            let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(&key.0) else {
                unreachable!("HMAC-SHA256 takes any key length")
            };
            mac.update(text.as_bytes());
            hex::encode(mac.finalize().into_bytes())
        }
        ChainKey::Legacy => hex::encode(Sha256::digest(text.as_bytes())),
    }
}

fn entry_link(key: ChainKey<'_>, entry: &Entry, prev_hash: &str) -> String {
    link(
        key,
        entry.seq,
        &entry.at,
        [&entry.actor, &entry.action, &entry.target, &entry.outcome],
        prev_hash,
    )
}

/// Checks a chain entry by entry, in order, without holding it in memory.
#[derive(Debug)]
pub struct Verifier<'a> {
    key: ChainKey<'a>,
    expect: Option<&'a Head>,
    next_seq: i64,
    prev_hash: String,
}

impl<'a> Verifier<'a> {
    /// A verifier of a chain under `key`, which must reach `expect` (a head recorded elsewhere)
    /// with the same MAC at its sequence number.
    pub fn new(key: ChainKey<'a>, expect: Option<&'a Head>) -> Verifier<'a> {
        Verifier {
            key,
            expect,
            next_seq: 1,
            prev_hash: GENESIS_HASH.to_string(),
        }
    }

    /// Checks the next entry.
    pub fn push(&mut self, entry: &Entry) -> Result<(), ChainError> {
        if entry.seq != self.next_seq || entry.prev_hash != self.prev_hash {
            return Err(ChainError::Broken { seq: self.next_seq });
        }
        if entry_link(self.key, entry, &self.prev_hash) != entry.hash {
            return Err(ChainError::Changed { seq: entry.seq });
        }
        if let Some(expect) = self.expect
            && expect.seq == entry.seq
            && !expect.hash.eq_ignore_ascii_case(&entry.hash)
        {
            return Err(ChainError::HeadMismatch { seq: entry.seq });
        }
        self.next_seq += 1;
        self.prev_hash.clone_from(&entry.hash);
        Ok(())
    }

    /// Ends the check: the last entry must be the stored head `stored` and not before the
    /// expected head.
    pub fn finish(self, stored: Option<&Head>, used: KeyUsed) -> Result<Verified, ChainError> {
        let last = self.next_seq - 1;
        if let Some(expect) = self.expect
            && expect.seq > last
        {
            return Err(ChainError::Truncated {
                last,
                head: expect.seq,
            });
        }
        match stored {
            Some(head) if head.seq > last => {
                return Err(ChainError::Truncated {
                    last,
                    head: head.seq,
                });
            }
            Some(head) if head.seq < last => return Err(ChainError::Broken { seq: head.seq + 1 }),
            Some(head) if head.hash != self.prev_hash => {
                return Err(ChainError::Changed { seq: head.seq });
            }
            None if last != 0 => return Err(ChainError::Broken { seq: 1 }),
            _ => {}
        }
        Ok(Verified {
            entries: last,
            head: stored.cloned(),
            key: used,
        })
    }
}

/// Checks that `entries` (all of them, in order) form an unbroken chain under `key` ending at
/// the stored head `stored`, and reaching `expect` if given.
pub fn verify(
    key: ChainKey<'_>,
    entries: &[Entry],
    stored: Option<&Head>,
    expect: Option<&Head>,
) -> Result<Verified, ChainError> {
    let mut verifier = Verifier::new(key, expect);
    for entry in entries {
        verifier.push(entry)?;
    }
    let used = match key {
        ChainKey::Keyed(_) => KeyUsed::Current,
        ChainKey::Legacy => KeyUsed::Legacy,
    };
    verifier.finish(stored, used)
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

/// The audit state of a [`Store`]: its keys, the key new entries are chained under, and the
/// head last written (for `/metrics`).
#[derive(Debug, Default)]
pub(crate) struct AuditState {
    keys: Option<AuditKeys>,
    signing: Option<KeyUsed>,
    head: Option<Head>,
}

impl AuditState {
    fn signing_key(&self) -> Option<&AuditKey> {
        let keys = self.keys.as_ref()?;
        match self.signing? {
            KeyUsed::Current => Some(&keys.current),
            KeyUsed::Previous => keys.previous.as_ref(),
            KeyUsed::Legacy => None,
        }
    }
}

/// What [`Store::init_audit`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuditStart {
    /// The chain verifies under the current key.
    Intact(Verified),
    /// The chain is under the previous key: new entries continue under it until a reseal
    /// re-chains it.
    UnderPreviousKey(Verified),
    /// A legacy SHA-256 chain verified and was re-chained under the current key (audited).
    Migrated {
        /// How many entries were re-chained.
        entries: i64,
    },
    /// The chain verifies under no key: new entries are chained under the current key, and
    /// verification keeps reporting the first bad entry.
    Broken(ChainError),
}

/// The filters and position of one page of the audit log.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
pub struct PageQuery {
    /// At most this many entries ([`PAGE_DEFAULT`] when absent, capped at [`PAGE_MAX`]).
    pub limit: Option<i64>,
    /// Only entries before this sequence number (the previous page's `next_before`).
    pub before: Option<i64>,
    /// Exact action, or a prefix ending in `.` (e.g. `cluster.`).
    pub action: Option<String>,
    /// Exact actor.
    pub actor: Option<String>,
    /// Exact target.
    pub target: Option<String>,
}

/// One page of the audit log: the newest matching entries before the cursor, oldest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Page {
    /// The entries, in chain order.
    pub entries: Vec<Entry>,
    /// The `before` of the next (older) page, when there may be one.
    pub next_before: Option<i64>,
}

const COLUMNS: &str = "seq, at, actor, action, target, outcome, prev_hash, hash";

/// Escapes `%`, `_` and `\` for a `LIKE … ESCAPE '\'` pattern.
fn like_prefix(prefix: &str) -> String {
    let mut out = String::with_capacity(prefix.len() + 1);
    for c in prefix.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('%');
    out
}

async fn scan_page<'e, E>(executor: E, after: i64) -> Result<Vec<Entry>, sqlx::Error>
where
    E: sqlx::Executor<'e, Database = sqlx::Any>,
{
    sqlx::query_as(
        "SELECT seq, at, actor, action, target, outcome, prev_hash, hash FROM audit_log \
         WHERE seq > $1 ORDER BY seq LIMIT $2",
    )
    .bind(after)
    .bind(SCAN_PAGE)
    .fetch_all(executor)
    .await
}

async fn stored_head<'e, E>(executor: E) -> Result<Option<Head>, sqlx::Error>
where
    E: sqlx::Executor<'e, Database = sqlx::Any>,
{
    sqlx::query_as("SELECT seq, hash FROM audit_head WHERE id = 1")
        .fetch_optional(executor)
        .await
}

/// The PostgreSQL advisory lock key that serialises audit chain writers ("wardn au" in ASCII).
const AUDIT_CHAIN_LOCK: i64 = 0x7761_7264_6e20_6175;

impl Store {
    /// Gives the store its audit keys and checks the chain: intact under the current key, under
    /// the previous one (a rotation in progress), a legacy SHA-256 chain (re-chained under the
    /// current key now, audited as `audit.rechain`), or broken (reported, and left as is: a
    /// re-chain would hide the damage). Until this is called, appends fail.
    pub async fn init_audit(&self, keys: AuditKeys) -> Result<AuditStart, StoreError> {
        let _guard = self.audit_lock.lock().await;
        let mut errors = Vec::new();
        let mut found = None;
        let mut candidates = vec![(ChainKey::Keyed(&keys.current), KeyUsed::Current)];
        if let Some(previous) = &keys.previous {
            candidates.push((ChainKey::Keyed(previous), KeyUsed::Previous));
        }
        candidates.push((ChainKey::Legacy, KeyUsed::Legacy));
        for (key, used) in candidates {
            match self.verify_under(key, used, None).await? {
                Ok(verified) => {
                    found = Some(verified);
                    break;
                }
                Err(err) => errors.push(err),
            }
        }
        let (start, signing) = match found {
            Some(verified) if verified.key == KeyUsed::Current => {
                (AuditStart::Intact(verified), KeyUsed::Current)
            }
            Some(verified) if verified.key == KeyUsed::Previous => {
                (AuditStart::UnderPreviousKey(verified), KeyUsed::Previous)
            }
            Some(_) => (AuditStart::Migrated { entries: 0 }, KeyUsed::Legacy),
            None => {
                // Report the error of the key that got furthest: the one the log was under.
                let err = errors
                    .into_iter()
                    .max_by_key(ChainError::seq)
                    .unwrap_or(ChainError::Broken { seq: 1 });
                (AuditStart::Broken(err), KeyUsed::Current)
            }
        };
        let head = stored_head(&self.pool).await?;
        {
            let mut state = self.audit.write();
            state.keys = Some(keys);
            state.signing = Some(signing);
            state.head = head;
        }
        drop(_guard);
        match start {
            AuditStart::Migrated { .. } => {
                let entries = self.rechain_audit("wardn").await?;
                Ok(AuditStart::Migrated { entries })
            }
            other => Ok(other),
        }
    }

    /// Verifies the whole chain under `key`, page by page.
    async fn verify_under(
        &self,
        key: ChainKey<'_>,
        used: KeyUsed,
        expect: Option<&Head>,
    ) -> Result<Result<Verified, ChainError>, StoreError> {
        let head = stored_head(&self.pool).await?;
        let mut verifier = Verifier::new(key, expect);
        let mut after = 0;
        loop {
            let page = scan_page(&self.pool, after).await?;
            for entry in &page {
                if let Err(err) = verifier.push(entry) {
                    return Ok(Err(err));
                }
            }
            match page.last() {
                Some(last) if page.len() as i64 == SCAN_PAGE => after = last.seq,
                _ => break,
            }
        }
        Ok(verifier.finish(head.as_ref(), used))
    }

    /// Verifies the chain under `keys` (the current key, else the previous one), reaching
    /// `expect` if given. The inner error names the first bad entry (under the key that got
    /// furthest).
    pub async fn verify_audit(
        &self,
        keys: &AuditKeys,
        expect: Option<&Head>,
    ) -> Result<Result<Verified, ChainError>, StoreError> {
        let current = self
            .verify_under(ChainKey::Keyed(&keys.current), KeyUsed::Current, expect)
            .await?;
        let (Err(current_err), Some(previous)) = (&current, &keys.previous) else {
            return Ok(current);
        };
        let previous = self
            .verify_under(ChainKey::Keyed(previous), KeyUsed::Previous, expect)
            .await?;
        Ok(match previous {
            Ok(verified) => Ok(verified),
            Err(err) if err.seq() > current_err.seq() => Err(err),
            Err(_) => current,
        })
    }

    /// Verifies the chain under this store's keys (see [`Store::init_audit`]).
    pub async fn verify_audit_configured(
        &self,
        expect: Option<&Head>,
    ) -> Result<Result<Verified, ChainError>, StoreError> {
        let keys = self.audit.read().keys.clone();
        let keys = keys.ok_or(StoreError::AuditKeyMissing)?;
        self.verify_audit(&keys, expect).await
    }

    /// Re-chains the whole log under the current key, after verifying it under the key it is
    /// under now (legacy SHA-256 or the previous key), in one transaction; audited as
    /// `audit.rechain` by `actor`. A chain that does not verify is left untouched (re-chaining
    /// it would hide the damage) and the error names the first bad entry. Returns how many
    /// entries were re-chained: 0 when the log is already under the current key.
    pub async fn rechain_audit(&self, actor: &str) -> Result<i64, StoreError> {
        let from = self.audit.read().signing;
        if from == Some(KeyUsed::Current) {
            return Ok(0);
        }
        let result = self.rechain(from).await;
        let target = match from {
            Some(KeyUsed::Legacy) => "legacy SHA-256 chain",
            _ => "previous key",
        };
        let outcome = match &result {
            Ok(n) => format!("success: {n} entries re-chained under the current key"),
            Err(err) => format!("failure: {err}"),
        };
        self.record_audit(actor, "audit.rechain", target, &outcome, &now_rfc3339())
            .await;
        result
    }

    async fn rechain(&self, from: Option<KeyUsed>) -> Result<i64, StoreError> {
        let _guard = self.audit_lock.lock().await;
        let keys = self.audit.read().keys.clone();
        let keys = keys.ok_or(StoreError::AuditKeyMissing)?;
        let old = match from {
            Some(KeyUsed::Legacy) => ChainKey::Legacy,
            Some(KeyUsed::Previous) => {
                ChainKey::Keyed(keys.previous.as_ref().ok_or(StoreError::AuditKeyMissing)?)
            }
            _ => return Ok(0),
        };
        let new = ChainKey::Keyed(&keys.current);
        let mut tx = self.begin_write().await?;
        self.lock_chain(&mut tx).await?;
        let head = stored_head(&mut *tx).await?;
        let mut verifier = Verifier::new(old, None);
        let mut prev = GENESIS_HASH.to_string();
        let mut after = 0;
        loop {
            let page = scan_page(&mut *tx, after).await?;
            for entry in &page {
                verifier.push(entry)?;
                let mac = entry_link(new, entry, &prev);
                sqlx::query("UPDATE audit_log SET prev_hash = $1, hash = $2 WHERE seq = $3")
                    .bind(&prev)
                    .bind(&mac)
                    .bind(entry.seq)
                    .execute(&mut *tx)
                    .await?;
                prev = mac;
            }
            match page.last() {
                Some(last) if page.len() as i64 == SCAN_PAGE => after = last.seq,
                _ => break,
            }
        }
        let verified = verifier.finish(head.as_ref(), KeyUsed::Legacy)?;
        let new_head = verified.head.map(|head| Head {
            seq: head.seq,
            hash: prev,
        });
        if let Some(head) = &new_head {
            sqlx::query("UPDATE audit_head SET hash = $1 WHERE id = 1")
                .bind(&head.hash)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        let mut state = self.audit.write();
        state.signing = Some(KeyUsed::Current);
        state.head = new_head;
        Ok(verified.entries)
    }

    /// The newest entry's sequence number and MAC as last written by this process.
    pub fn audit_head(&self) -> Option<Head> {
        self.audit.read().head.clone()
    }

    /// Serialises writers of the chain across processes for the rest of transaction `tx`: the
    /// in-process lock orders one process's appends, and on PostgreSQL, where several server
    /// replicas append to one chain, a transaction-scoped advisory lock orders them all (so
    /// no two appends read the same head). SQLite's `BEGIN IMMEDIATE` already excludes every
    /// other writer.
    async fn lock_chain(
        &self,
        tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    ) -> Result<(), StoreError> {
        if self.backend == super::Backend::Postgres {
            sqlx::query("SELECT pg_advisory_xact_lock($1)")
                .bind(AUDIT_CHAIN_LOCK)
                .execute(&mut **tx)
                .await?;
        }
        Ok(())
    }

    /// Appends an entry at time `at` (RFC 3339), chaining it to the current head under the
    /// audit key, and logs the new head (`audit_seq`, `audit_mac`). Each field is stored cut
    /// to [`MAX_FIELD_CHARS`] characters (see [`NewEntry::bounded`]). Fails with
    /// [`StoreError::AuditKeyMissing`] before [`Store::init_audit`].
    pub async fn append_audit(&self, fields: &NewEntry, at: &str) -> Result<Entry, StoreError> {
        let fields = &fields.bounded();
        let _guard = self.audit_lock.lock().await;
        let key = self
            .audit
            .read()
            .signing_key()
            .cloned()
            .ok_or(StoreError::AuditKeyMissing)?;
        let mut tx = self.begin_write().await?;
        self.lock_chain(&mut tx).await?;
        let head = stored_head(&mut *tx).await?;
        let (prev_seq, prev_hash) = match head {
            Some(head) => (head.seq, head.hash),
            None => (0, GENESIS_HASH.to_string()),
        };
        let seq = prev_seq + 1;
        let hash = entry_mac(ChainKey::Keyed(&key), seq, at, fields, &prev_hash);
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
        tracing::info!(
            audit_seq = seq,
            audit_mac = %hash,
            action = %fields.action,
            "audit entry appended"
        );
        self.audit.write().head = Some(Head {
            seq,
            hash: hash.clone(),
        });
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

    /// Every audit entry in order, and the recorded head (for tests and small logs; the API
    /// pages with [`Store::audit_page`]).
    pub async fn audit_log(&self) -> Result<(Vec<Entry>, Option<Head>), StoreError> {
        let entries = sqlx::query_as(
            "SELECT seq, at, actor, action, target, outcome, prev_hash, hash FROM audit_log ORDER BY seq",
        )
            .fetch_all(&self.pool)
            .await?;
        let head = stored_head(&self.pool).await?;
        Ok((entries, head))
    }

    /// One page of the audit log: the newest entries matching `query` before its cursor.
    pub async fn audit_page(&self, query: &PageQuery) -> Result<Page, StoreError> {
        let limit = query.limit.unwrap_or(PAGE_DEFAULT).clamp(1, PAGE_MAX);
        let mut sql = format!("SELECT {COLUMNS} FROM audit_log WHERE seq < $1");
        let mut binds: Vec<String> = Vec::new();
        if let Some(action) = &query.action {
            if action.ends_with('.') {
                binds.push(like_prefix(action));
                sql.push_str(&format!(
                    " AND action LIKE ${} ESCAPE '\\'",
                    binds.len() + 1
                ));
            } else {
                binds.push(action.clone());
                sql.push_str(&format!(" AND action = ${}", binds.len() + 1));
            }
        }
        for (column, value) in [("actor", &query.actor), ("target", &query.target)] {
            if let Some(value) = value {
                binds.push(value.clone());
                sql.push_str(&format!(" AND {column} = ${}", binds.len() + 1));
            }
        }
        sql.push_str(&format!(" ORDER BY seq DESC LIMIT ${}", binds.len() + 2));
        // Only placeholders and fixed column names are spliced in; every value is bound.
        let mut select = sqlx::query_as::<_, Entry>(sqlx::AssertSqlSafe(sql))
            .bind(query.before.unwrap_or(i64::MAX));
        for value in binds {
            select = select.bind(value);
        }
        let mut entries = select.bind(limit + 1).fetch_all(&self.pool).await?;
        let more = entries.len() as i64 > limit;
        entries.truncate(limit as usize);
        entries.reverse();
        let next_before = if more {
            entries.first().map(|e| e.seq)
        } else {
            None
        };
        Ok(Page {
            entries,
            next_before,
        })
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
pub(crate) mod tests {
    use super::*;

    /// Keys for tests: current `[1; 32]`, no previous one.
    pub(crate) fn test_keys() -> AuditKeys {
        AuditKeys {
            current: AuditKey::new([1; 32]),
            previous: None,
        }
    }

    #[test]
    fn bounded_cuts_at_a_character_boundary() {
        assert_eq!(bounded("short"), "short");
        let exact = "x".repeat(MAX_FIELD_CHARS);
        assert_eq!(bounded(&exact), exact);
        let wide = "é".repeat(MAX_FIELD_CHARS + 10);
        assert_eq!(bounded(&wide).chars().count(), MAX_FIELD_CHARS);
        assert_eq!(bounded(&wide), "é".repeat(MAX_FIELD_CHARS));
    }

    fn chain(key: ChainKey<'_>, n: i64) -> Vec<Entry> {
        let mut prev = GENESIS_HASH.to_string();
        (1..=n)
            .map(|seq| {
                let fields = NewEntry {
                    actor: "admin".into(),
                    action: "cluster.register".into(),
                    target: format!("c{seq}"),
                    outcome: "success".into(),
                };
                let at = "2026-01-01T00:00:00Z";
                let hash = entry_mac(key, seq, at, &fields, &prev);
                Entry {
                    seq,
                    at: at.into(),
                    actor: fields.actor,
                    action: fields.action,
                    target: fields.target,
                    outcome: fields.outcome,
                    prev_hash: std::mem::replace(&mut prev, hash.clone()),
                    hash,
                }
            })
            .collect()
    }

    fn head_of(entries: &[Entry]) -> Option<Head> {
        entries.last().map(|e| Head {
            seq: e.seq,
            hash: e.hash.clone(),
        })
    }

    #[test]
    fn a_keyed_chain_fails_under_a_wrong_key_and_after_an_unkeyed_rechain() {
        let keys = test_keys();
        let key = ChainKey::Keyed(&keys.current);
        let mut entries = chain(key, 5);
        let head = head_of(&entries);
        let verified = verify(key, &entries, head.as_ref(), None).unwrap();
        assert_eq!(verified.entries, 5);
        let wrong = AuditKey::new([2; 32]);
        assert_eq!(
            verify(ChainKey::Keyed(&wrong), &entries, head.as_ref(), None),
            Err(ChainError::Changed { seq: 1 })
        );
        // An attacker edits entry 3 and re-chains from there with plain SHA-256.
        entries[2].actor = "mallory".into();
        for i in 2..entries.len() {
            let prev = entries[i - 1].hash.clone();
            entries[i].prev_hash = prev.clone();
            entries[i].hash = entry_link(ChainKey::Legacy, &entries[i], &prev);
        }
        let forged_head = head_of(&entries);
        let err = verify(key, &entries, forged_head.as_ref(), None).unwrap_err();
        assert_eq!(err, ChainError::Changed { seq: 3 });
        assert!(err.to_string().contains("audit entry 3"), "{err}");
    }

    #[test]
    fn an_expected_head_detects_deleted_newest_entries() {
        let keys = test_keys();
        let key = ChainKey::Keyed(&keys.current);
        let entries = chain(key, 6);
        let expect = head_of(&entries).unwrap();
        // Entries 5 and 6 deleted and the stored head moved back to 4: intact on its own.
        let short = &entries[..4];
        let moved = head_of(short);
        verify(key, short, moved.as_ref(), None).unwrap();
        let err = verify(key, short, moved.as_ref(), Some(&expect)).unwrap_err();
        assert_eq!(err, ChainError::Truncated { last: 4, head: 6 });
        assert_eq!(err.seq(), 5);
        assert!(
            err.to_string().starts_with("audit entry 5 is missing"),
            "{err}"
        );
        // A different MAC at the expected head (the log was refilled) is caught too.
        let other = Head {
            seq: 4,
            hash: "0".repeat(64),
        };
        assert_eq!(
            verify(key, &entries, head_of(&entries).as_ref(), Some(&other)),
            Err(ChainError::HeadMismatch { seq: 4 })
        );
    }

    #[test]
    fn heads_parse_from_seq_colon_mac() {
        let mac = "AB".repeat(32);
        let head: Head = format!("7:{mac}").parse().unwrap();
        assert_eq!(head.seq, 7);
        assert_eq!(head.hash, "ab".repeat(32));
        assert_eq!(head.to_string(), format!("7:{}", "ab".repeat(32)));
        for bad in ["", "7", "x:ab", "0:ab", &format!("7:{}", "g".repeat(64))] {
            assert!(bad.parse::<Head>().is_err(), "{bad}");
        }
    }

    #[tokio::test]
    async fn appends_need_the_key_and_audited_bounds_every_field() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), None).await.unwrap();
        assert!(matches!(
            store
                .append_audit(
                    &NewEntry {
                        actor: "a".into(),
                        action: "b".into(),
                        target: "c".into(),
                        outcome: "d".into(),
                    },
                    "2026-01-01T00:00:00Z"
                )
                .await,
            Err(StoreError::AuditKeyMissing)
        ));
        store.init_audit(test_keys()).await.unwrap();
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
        let keys = test_keys();
        verify(
            ChainKey::Keyed(&keys.current),
            &entries,
            head.as_ref(),
            None,
        )
        .unwrap();
        assert_eq!(store.audit_head(), head);
        store.close().await;
    }
}
