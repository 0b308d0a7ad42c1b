//! The write log: every write a cluster served (create, update, patch, delete; dry runs and
//! refusals excluded), in order, with the caller's full User-Agent — what a real API server's
//! audit log records. Tests read it to tell which client wrote an object when several write
//! to one cluster. Bounded: the oldest records go first past [`CAPACITY`].

use std::collections::VecDeque;

use parking_lot::Mutex;

/// How many writes the log keeps.
pub const CAPACITY: usize = 200_000;

/// One served write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteRecord {
    /// Its position among every write the cluster served, from 1.
    pub seq: u64,
    /// The verb: `create`, `update`, `patch`, `delete` or `deletecollection`.
    pub verb: String,
    /// The resource's plural name, with its group (`configmaps`, `deployments.apps`).
    pub resource: String,
    /// The namespace ("" for cluster-scoped or all).
    pub namespace: String,
    /// The object's name ("" for collections).
    pub name: String,
    /// The subresource written (`status`, `scale`), if any.
    pub subresource: Option<String>,
    /// The caller's User-Agent header, whole.
    pub user_agent: String,
}

/// The bounded log of a cluster's writes.
#[derive(Debug, Default)]
pub struct WriteLog {
    inner: Mutex<(u64, VecDeque<WriteRecord>)>,
}

impl WriteLog {
    /// Appends `record`, numbering it; drops the oldest past [`CAPACITY`].
    pub fn push(&self, mut record: WriteRecord) {
        let mut inner = self.inner.lock();
        inner.0 += 1;
        record.seq = inner.0;
        if inner.1.len() == CAPACITY {
            inner.1.pop_front();
        }
        inner.1.push_back(record);
    }

    /// The writes kept, oldest first.
    pub fn records(&self) -> Vec<WriteRecord> {
        self.inner.lock().1.iter().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(name: &str) -> WriteRecord {
        WriteRecord {
            seq: 0,
            verb: "patch".into(),
            resource: "configmaps".into(),
            namespace: "team".into(),
            name: name.into(),
            subresource: None,
            user_agent: "wardn/0.1.0".into(),
        }
    }

    #[test]
    fn writes_are_numbered_in_order_and_the_oldest_go_past_capacity() {
        let log = WriteLog::default();
        for i in 0..CAPACITY + 5 {
            log.push(record(&format!("cm-{i}")));
        }
        let records = log.records();
        assert_eq!(records.len(), CAPACITY);
        assert_eq!(records[0].seq, 6);
        assert_eq!(records[0].name, "cm-5");
        assert_eq!(records.last().unwrap().seq, (CAPACITY + 5) as u64);
    }
}
