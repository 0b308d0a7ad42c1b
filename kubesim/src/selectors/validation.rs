//! Label key and value errors worded as field errors (the rules themselves are
//! [`crate::names`]'s `IsQualifiedName` and `IsValidLabelValue`).

/// Formats strings as Go's `%#v` prints a `[]string`, as field errors show bad values.
pub(super) fn go_string_slice(values: &[String]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

/// The field error for an invalid label key at `path` ("" in the string parser, `key` in
/// `NewRequirement`), or None when the key is valid.
pub(super) fn label_key_error(key: &str, path: &str) -> Option<String> {
    let problems = crate::names::qualified_name(key);
    (!problems.is_empty())
        .then(|| format!("{path}: Invalid value: {key:?}: {}", problems.join("; ")))
}

/// The problems of a label value (apimachinery `validation.IsValidLabelValue`).
pub(super) fn label_value_problems(value: &str) -> Vec<String> {
    crate::names::label_value(value)
}
