//! Audit chain figures on SQLite: appends `WARDN_AUDIT_BENCH_N` entries (default 1,000,000)
//! one transaction each, as the daemon does, then verifies the whole chain (read in pages)
//! against the expected head. Prints figures; asserts nothing about time.

use std::time::Instant;

use wardn::store::Store;
use wardn::store::audit::{AuditKey, AuditKeys, NewEntry};

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let n: i64 = std::env::var("WARDN_AUDIT_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let dir = tempfile::tempdir().expect("temporary directory");
    let store = Store::open(dir.path(), None).await.expect("store");
    let keys = AuditKeys {
        current: AuditKey::new([1; 32]),
        previous: None,
    };
    store.init_audit(keys.clone()).await.expect("audit keys");
    let started = Instant::now();
    for i in 0..n {
        let entry = NewEntry {
            actor: "admin".into(),
            action: "app.sync".into(),
            target: format!("local/app-{}", i % 1000),
            outcome: "success".into(),
        };
        store
            .append_audit(&entry, "2026-01-01T00:00:00Z")
            .await
            .expect("append");
        if (i + 1) % 100_000 == 0 {
            println!("  {} appended, {:.1?}", i + 1, started.elapsed());
        }
    }
    let appended = started.elapsed();
    let head = store.audit_head().expect("a head");
    let started = Instant::now();
    let verified = store
        .verify_audit(&keys, Some(&head))
        .await
        .expect("read")
        .expect("intact");
    let verify = started.elapsed();
    assert_eq!(verified.entries, n);
    println!(
        "audit: {n} appends in {appended:.2?} ({:.0}/s); verify in {verify:.2?} ({:.0} entries/s)",
        n as f64 / appended.as_secs_f64(),
        n as f64 / verify.as_secs_f64()
    );
    store.close().await;
}
