//! The error type of the patch functions.

/// Why a patch could not be applied. Every variant names where in the document it failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// The patch document itself is not what the patch format requires.
    #[error("invalid patch: {0}")]
    Invalid(String),
    /// A JSON patch (RFC 6902) operation could not be applied.
    #[error("JSON patch operation {index} ({op} {path}): {reason}")]
    Operation {
        /// Zero-based position of the operation in the patch array.
        index: usize,
        /// The operation name (`add`, `remove`, ...), or `?` when it is missing.
        op: String,
        /// The operation's `path`.
        path: String,
        /// What went wrong.
        reason: String,
    },
    /// A JSON patch `test` operation found a different value (HTTP APIs answer 422).
    #[error("JSON patch operation {index} (test {path}): the value differs from the expected one")]
    TestFailed {
        /// Zero-based position of the operation in the patch array.
        index: usize,
        /// The tested path.
        path: String,
    },
    /// A strategic merge patch could not be applied at a JSON path of the document.
    #[error("strategic merge patch at {path}: {reason}")]
    Strategic {
        /// Where in the document, e.g. `.spec.template.spec.containers[1]`.
        path: String,
        /// What went wrong.
        reason: String,
    },
}
