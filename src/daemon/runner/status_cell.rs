//! How the runner holds one App's status: as compact JSON text, the form the store holds it
//! in, parsed when read.
//!
//! Every replica of a fleet keeps the status of every App, for the API; the owner writes it,
//! and the others reload what it stored. Parsed, a status with an inventory of ten objects
//! took about 5 KB of small allocations; its text is about a fifth of that in one allocation.
//! A status is read by the API, at the start of a pass and when a pass records a new one:
//! parsing it there costs microseconds, holding ten thousand parsed ones cost tens of MiB on
//! every replica.

use serde_json::value::RawValue;

use crate::app::AppStatus;

/// One App's status as the runner holds it: JSON text, or nothing for an empty status.
#[derive(Debug, Clone, Default)]
pub struct StatusCell(Option<Box<RawValue>>);

impl StatusCell {
    /// Whether the cell holds a status (an empty one holds nothing).
    pub(super) fn is_held(&self) -> bool {
        self.0.is_some()
    }

    /// A cell holding `text`, a status as the store holds it.
    pub(super) fn stored(text: Box<RawValue>) -> StatusCell {
        StatusCell(Some(text))
    }

    /// The status of App `key`. Text that does not parse as a status (written by another
    /// release, or damaged in the store) reads as an empty status, with a warning naming the
    /// App: the App's next pass writes a fresh one.
    pub fn read(&self, key: &str) -> AppStatus {
        let Some(text) = &self.0 else {
            return AppStatus::default();
        };
        serde_json::from_str(text.get()).unwrap_or_else(|e| {
            tracing::warn!(app = %key, error = %e, "stored status unreadable; read as empty");
            AppStatus::default()
        })
    }

    /// `status` of App `key` as the text a cell holds and the store is given; `None` (logged)
    /// if it could not be written as JSON: not expected, as a status has only string keys and
    /// finite numbers.
    pub(super) fn text_of(key: &str, status: &AppStatus) -> Option<Box<RawValue>> {
        serde_json::value::to_raw_value(status)
            .inspect_err(|e| tracing::error!(app = %key, error = %e, "status is not JSON"))
            .ok()
    }

    /// Holds `status` as App `key`'s status; answers the text now held, which is what the
    /// store is given (`None`, keeping the text held before, when [`StatusCell::text_of`]
    /// has none).
    pub(super) fn write(&mut self, key: &str, status: &AppStatus) -> Option<&RawValue> {
        Some(&**self.0.insert(Self::text_of(key, status)?))
    }

    /// Takes `text`, the status the store holds, unless it is the text held already (a reload
    /// of an unchanged status allocates nothing that stays).
    pub(super) fn store_text(&mut self, text: Box<RawValue>) {
        if self.0.as_ref().is_some_and(|held| held.get() == text.get()) {
            return;
        }
        self.0 = Some(text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::Phase;
    use crate::object::ObjectRef;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_string()).unwrap()
    }

    fn status(i: usize) -> AppStatus {
        AppStatus {
            phase: Some(if i.is_multiple_of(2) {
                Phase::Held
            } else {
                Phase::Synced
            }),
            plan_hash: Some(format!("sha256:{i:064x}")),
            revision: Some("0123456789abcdef".into()),
            message: Some("quotes \" and \\ and\nnewlines, unicode ✓".into()),
            inventory: (0..10)
                .map(|j| ObjectRef {
                    api_version: "apps/v1".into(),
                    kind: "Deployment".into(),
                    namespace: Some(format!("ns-{i}")),
                    name: format!("web-{j}"),
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn a_thousand_writes_read_back_as_the_status_written() {
        let mut cell = StatusCell::default();
        assert_eq!(cell.read("ns/a"), AppStatus::default());
        for i in 0..1_000 {
            let written = status(i);
            let text = cell.write("ns/a", &written).map(|t| t.get().to_string());
            assert_eq!(text, Some(serde_json::to_string(&written).unwrap()));
            assert_eq!(cell.read("ns/a"), written);
        }
        let text = raw(&serde_json::to_string(&status(7)).unwrap());
        assert_eq!(StatusCell::stored(text).read("ns/a"), status(7));
    }

    #[test]
    fn text_that_is_no_status_reads_as_an_empty_status_not_a_panic() {
        for text in [
            r#"{"phase":"NoSuchPhase"}"#,
            "[1,2]",
            "42",
            r#"{"inventory":7}"#,
            "null",
        ] {
            assert_eq!(
                StatusCell::stored(raw(text)).read("ns/a"),
                AppStatus::default(),
                "{text}"
            );
        }
    }

    #[test]
    fn reloading_the_same_text_keeps_the_held_one() {
        let mut cell = StatusCell::stored(raw(r#"{"phase":"Synced"}"#));
        let held = |cell: &StatusCell| cell.0.as_ref().map(|t| t.get().as_ptr());
        let before = held(&cell);
        for _ in 0..1_000 {
            cell.store_text(raw(r#"{"phase":"Synced"}"#));
        }
        assert_eq!(held(&cell), before);
        cell.store_text(raw(r#"{"phase":"Held"}"#));
        assert_eq!(cell.read("ns/a").phase, Some(Phase::Held));
    }
}
