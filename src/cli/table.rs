//! The CLI's tables: column-aligned text ([`crate::text_table::render`]) and short revisions.

pub use crate::text_table::render;

/// A revision shortened like a Git short id (`sha256:` prefixes dropped).
pub fn short_revision(revision: Option<&str>) -> String {
    let rev = revision.unwrap_or("-");
    let rev = rev.rsplit(':').next().unwrap_or(rev);
    rev.chars().take(12).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revisions_are_shortened() {
        assert_eq!(
            short_revision(Some("sha256:0123456789abcdef")),
            "0123456789ab"
        );
        assert_eq!(short_revision(Some("v1")), "v1");
        assert_eq!(short_revision(None), "-");
    }
}
