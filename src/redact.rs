//! `Debug` output without secrets. Request bodies, settings and kubeconfig entries that carry
//! a password, token, key, kubeconfig or database URL print `***` in its place, so that a
//! `{:?}` in a log line, an error or a failing test never shows one. Each such type writes its
//! `Debug` by hand with [`Hidden`] or [`hidden`] for the secret fields.

use std::fmt;

/// Stands in for a secret in `Debug` output: prints `***`.
pub struct Hidden;

impl fmt::Debug for Hidden {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// `Some(***)` for an optional secret that is set, `None` for one that is not: whether it is
/// set is worth seeing, its value never is.
pub fn hidden<T>(secret: &Option<T>) -> Option<Hidden> {
    secret.as_ref().map(|_| Hidden)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_shows_presence_not_value() {
        assert_eq!(format!("{:?}", Hidden), "***");
        assert_eq!(format!("{:?}", hidden(&Some("hunter2"))), "Some(***)");
        assert_eq!(format!("{:?}", hidden::<String>(&None)), "None");
    }
}
