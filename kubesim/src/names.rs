//! The name and key formats of apimachinery's `util/validation` (DNS-1123 labels and
//! subdomains, DNS-1035 labels, qualified names, label values, port names, config keys),
//! each returning kube-apiserver's messages for a bad value (empty when the value is good).

const LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const SUBDOMAIN_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1035_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const QUALIFIED_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// `RegexError`: the message, examples and the pattern, worded as apimachinery does.
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let shown: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{msg} (e.g. {}regex used for validation is '{fmt}')",
        shown.join(" or ")
    )
}

/// `MaxLenError`.
pub fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} characters")
}

fn is_lower_alnum(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

/// Whether `s` matches `[a-z0-9]([-a-z0-9]*[a-z0-9])?`.
fn label_shape(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| is_lower_alnum(c) || c == '-')
        && s.starts_with(is_lower_alnum)
        && s.ends_with(is_lower_alnum)
}

fn subdomain_shape(s: &str) -> bool {
    s.split('.').all(label_shape)
}

/// `IsDNS1123Label`.
pub fn dns1123_label(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !label_shape(s) {
        if subdomain_shape(s) {
            errs.push("must not contain dots".into());
        } else {
            errs.push(regex_error(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
                LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// `IsDNS1123Subdomain`.
pub fn dns1123_subdomain(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push(max_len_error(253));
    }
    if !subdomain_shape(s) {
        errs.push(regex_error(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
            SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// `IsDNS1035Label`.
pub fn dns1035_label(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !(label_shape(s) && s.starts_with(|c: char| c.is_ascii_lowercase())) {
        errs.push(regex_error(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
            DNS1035_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// `IsValidPathSegmentName`: the names of RBAC objects and other path-segment-named kinds.
pub fn path_segment_name(s: &str) -> Vec<String> {
    for bad in ["..", "."] {
        if s == bad {
            return vec![format!("may not be '{bad}'")];
        }
    }
    let mut errs = Vec::new();
    for bad in ["/", "%"] {
        if s.contains(bad) {
            errs.push(format!("may not contain '{bad}'"));
        }
    }
    errs
}

/// A name-generation prefix may end in '-': the name rules apply to the rest.
pub fn mask_trailing_dash(s: &str) -> String {
    match s.strip_suffix('-') {
        Some(rest) if s.len() > 1 => format!("{rest}a"),
        _ => s.to_string(),
    }
}

fn qualified_part(s: &str) -> bool {
    let alnum = |c: char| c.is_ascii_alphanumeric();
    !s.is_empty()
        && s.chars()
            .all(|c| alnum(c) || c == '-' || c == '_' || c == '.')
        && s.starts_with(alnum)
        && s.ends_with(alnum)
}

/// `IsQualifiedName`: label keys, annotation keys (lowercased first) and finalizers.
pub fn qualified_name(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = s.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".into());
            } else {
                errs.extend(
                    dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            name
        }
        _ => {
            return vec![format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(
                    QUALIFIED_MSG,
                    QUALIFIED_FMT,
                    &["MyName", "my.name", "123-abc"]
                )
            )];
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".into());
    } else if name.len() > 63 {
        errs.push(format!("name part {}", max_len_error(63)));
    }
    if !qualified_part(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_MSG,
                QUALIFIED_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// `IsValidLabelValue`.
pub fn label_value(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !(s.is_empty() || qualified_part(s)) {
        errs.push(regex_error(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            &format!("({QUALIFIED_FMT})?"),
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// `IsValidPortName` (IANA service names).
pub fn port_name(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 15 {
        errs.push(max_len_error(15));
    }
    if s.is_empty() || !s.chars().all(|c| is_lower_alnum(c) || c == '-') {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".into());
    }
    if !s.chars().any(|c| c.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".into());
    }
    if s.contains("--") {
        errs.push("must not contain consecutive hyphens".into());
    }
    if s.starts_with('-') || s.ends_with('-') {
        errs.push("must not begin or end with a hyphen".into());
    }
    errs
}

/// `IsValidPortNum`: 1..=65535.
pub fn port_number(n: i64) -> Vec<String> {
    if (1..=65535).contains(&n) {
        Vec::new()
    } else {
        vec!["must be between 1 and 65535, inclusive".into()]
    }
}

/// `IsConfigMapKey`: the keys of ConfigMap and Secret data.
pub fn config_map_key(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push(max_len_error(253));
    }
    if s.is_empty()
        || !s
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
    {
        errs.push(regex_error(
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
            "[-._a-zA-Z0-9]+",
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    if s == "." {
        errs.push("must not be '.'".into());
    } else if s == ".." {
        errs.push("must not be '..'".into());
    } else if s.starts_with("..") {
        errs.push("must not start with '..'".into());
    }
    errs
}

/// `IsWildcardDNS1123Subdomain`'s shape: `*.` followed by a subdomain.
pub fn is_wildcard_subdomain(s: &str) -> bool {
    s.strip_prefix("*.").is_some_and(subdomain_shape) && s.len() <= 253
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_subdomains() {
        assert!(dns1123_label("my-name").is_empty());
        assert!(dns1123_subdomain("a.b-c.d").is_empty());
        assert_eq!(dns1123_label("a.b"), vec!["must not contain dots"]);
        assert_eq!(
            dns1123_subdomain("BadName"),
            vec![
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            ]
        );
        assert_eq!(
            dns1123_label("-x")[0],
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
        );
        assert_eq!(
            dns1123_label(&"a".repeat(64))[0],
            "must be no more than 63 characters"
        );
        assert!(!dns1123_subdomain("a..b").is_empty());
        assert!(!dns1123_subdomain("").is_empty());
        assert!(!dns1035_label("1abc").is_empty());
        assert!(dns1035_label("abc-1").is_empty());
        assert_eq!(mask_trailing_dash("web-"), "weba");
    }

    #[test]
    fn qualified_names_and_label_values() {
        assert!(qualified_name("app.kubernetes.io/name").is_empty());
        assert!(qualified_name("Foo_bar.1").is_empty());
        assert_eq!(qualified_name("/x"), vec!["prefix part must be non-empty"]);
        assert_eq!(qualified_name("a/b/c").len(), 1);
        assert!(qualified_name("a/b/c")[0].starts_with("a qualified name must consist"));
        assert!(qualified_name("Bad.Prefix/x")[0].starts_with("prefix part a lowercase RFC 1123"));
        assert!(qualified_name("-x")[0].starts_with("name part must consist of"));
        assert!(label_value("").is_empty());
        assert!(label_value("my_value.1").is_empty());
        assert_eq!(label_value(&"x".repeat(64)), vec![max_len_error(63)]);
        assert!(label_value("a b")[0].starts_with("a valid label must be an empty string"));
    }

    #[test]
    fn ports_keys_and_segments() {
        assert!(port_name("http").is_empty());
        assert!(port_name("80").contains(&"must contain at least one letter (a-z)".to_string()));
        assert_eq!(
            port_number(0),
            vec!["must be between 1 and 65535, inclusive"]
        );
        assert!(config_map_key("app.properties").is_empty());
        assert_eq!(config_map_key("..x"), vec!["must not start with '..'"]);
        assert!(!config_map_key("a/b").is_empty());
        assert!(path_segment_name("system:controller").is_empty());
        assert_eq!(path_segment_name(".."), vec!["may not be '..'"]);
        assert!(is_wildcard_subdomain("*.example.com"));
        assert!(!is_wildcard_subdomain("*"));
    }
}
