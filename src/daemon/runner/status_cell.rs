//! How the runner holds one App's status: parsed while this process writes it, or as the JSON
//! text the store holds while another replica owns the App (`--shards auto`).
//!
//! Every replica of a fleet keeps the status of every App, for the API; only the owner writes
//! it, and the others reload what it stored. Parsed, a status with an inventory of ten objects
//! took about 6 KB of small allocations; its stored text is about a third of that in one
//! allocation. A replica of four holds three quarters of the fleet's statuses this way, and
//! parses one only when it is read (an API request, a pass after a takeover).

use serde_json::value::RawValue;

use crate::app::AppStatus;

/// One App's status as the runner holds it.
#[derive(Debug, Clone)]
pub(super) enum StatusCell {
    /// Parsed: the status of an App this process passes (or has not heard of from the store).
    Parsed(Box<AppStatus>),
    /// The JSON text another replica stored, as read from the store; parsed when read.
    Stored(Box<RawValue>),
}

impl Default for StatusCell {
    fn default() -> Self {
        StatusCell::Parsed(Box::default())
    }
}

impl From<AppStatus> for StatusCell {
    fn from(status: AppStatus) -> Self {
        StatusCell::Parsed(Box::new(status))
    }
}

impl StatusCell {
    /// The status of App `key`. Stored text that no longer parses as a status (written by
    /// another release, or damaged in the store) reads as an empty status, with a warning
    /// naming the App: the App's next pass writes a fresh one.
    pub(super) fn into_status(self, key: &str) -> AppStatus {
        match self {
            StatusCell::Parsed(status) => *status,
            StatusCell::Stored(text) => parse(key, &text),
        }
    }

    /// The status of App `key`, parsed in place if it was stored text, for the owner to
    /// compare with and replace.
    pub(super) fn parsed_mut(&mut self, key: &str) -> &mut AppStatus {
        if let StatusCell::Stored(text) = self {
            *self = StatusCell::Parsed(Box::new(parse(key, text)));
        }
        match self {
            StatusCell::Parsed(status) => status,
            // Replaced just above.
            StatusCell::Stored(_) => unreachable!("a stored status is parsed above"),
        }
    }

    /// Takes `text`, the status the store holds, unless it is the text held already (a reload
    /// of an unchanged status allocates nothing that stays).
    pub(super) fn store_text(&mut self, text: Box<RawValue>) {
        if matches!(self, StatusCell::Stored(held) if held.get() == text.get()) {
            return;
        }
        *self = StatusCell::Stored(text);
    }
}

/// `text` parsed as App `key`'s status; an empty status (and a warning) if it does not parse.
fn parse(key: &str, text: &RawValue) -> AppStatus {
    serde_json::from_str(text.get()).unwrap_or_else(|e| {
        tracing::warn!(app = %key, error = %e, "stored status unreadable; read as empty");
        AppStatus::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::Phase;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_string()).unwrap()
    }

    #[test]
    fn stored_text_reads_back_as_the_status_it_was_written_from() {
        let status = AppStatus {
            phase: Some(Phase::Held),
            plan_hash: Some("sha256:abc".into()),
            revision: Some("0123456789abcdef".into()),
            ..Default::default()
        };
        let text = raw(&serde_json::to_string(&status).unwrap());
        let cell = StatusCell::Stored(text.clone());
        assert_eq!(cell.clone().into_status("ns/a"), status);
        let mut cell = cell;
        assert_eq!(cell.parsed_mut("ns/a"), &status);
        assert!(matches!(cell, StatusCell::Parsed(_)));
    }

    #[test]
    fn text_that_is_no_status_reads_as_an_empty_status_not_a_panic() {
        for text in [
            r#"{"phase":"NoSuchPhase"}"#,
            "[1,2]",
            "42",
            r#"{"inventory":7}"#,
        ] {
            let mut cell = StatusCell::Stored(raw(text));
            assert_eq!(
                cell.clone().into_status("ns/a"),
                AppStatus::default(),
                "{text}"
            );
            assert_eq!(cell.parsed_mut("ns/a"), &AppStatus::default(), "{text}");
        }
    }

    #[test]
    fn reloading_the_same_text_keeps_the_held_one() {
        let mut cell = StatusCell::Stored(raw(r#"{"phase":"Synced"}"#));
        let before = match &cell {
            StatusCell::Stored(text) => text.get().as_ptr(),
            StatusCell::Parsed(_) => unreachable!(),
        };
        for _ in 0..1_000 {
            cell.store_text(raw(r#"{"phase":"Synced"}"#));
        }
        let after = match &cell {
            StatusCell::Stored(text) => text.get().as_ptr(),
            StatusCell::Parsed(_) => unreachable!(),
        };
        assert_eq!(before, after);
        cell.store_text(raw(r#"{"phase":"Held"}"#));
        assert_eq!(cell.into_status("ns/a").phase, Some(Phase::Held));
    }
}
