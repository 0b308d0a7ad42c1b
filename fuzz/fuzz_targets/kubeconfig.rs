//! Fuzzes cluster registration's kubeconfig check (`wardn::clusters::kubeconfig::validate`):
//! arbitrary text as a kubeconfig for one fixed server URL. Any panic is a bug; so is a
//! refusal that does not name a field of the kubeconfig.
//!
//! Run: `RUSTC_BOOTSTRAP=1 cargo fuzz run kubeconfig fuzz/corpus/kubeconfig`
//!
//! `make test` compiles this file into `tests/fuzz_corpus.rs` too (hence `cfg(test)`), which
//! replays the seed corpus through [`check`].
#![cfg_attr(not(test), no_main)]

use wardn::clusters::kubeconfig::validate;

/// The property fuzzed: the check never panics, and a refusal names a kubeconfig field.
pub fn check(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Err(err) = validate(&text, "https://10.0.0.1:6443") {
        assert!(err.field.starts_with("kubeconfig"), "{err}");
    }
}

#[cfg(not(test))]
libfuzzer_sys::fuzz_target!(|data: &[u8]| check(data));
