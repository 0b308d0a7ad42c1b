//! Whether one PolicyRule allows a request: verbs, API groups, resources
//! (`resource/subresource`, `*`, `*/subresource`), resourceNames and nonResourceURLs (exact or
//! `prefix*`); and reading a rule's string lists ([`strings`]), which the authorizer uses too.

use serde_json::Value;

use super::request::Request;

/// The strings of the list at `key` (absent or non-list: none), without allocating.
pub(super) fn strings<'v>(value: &'v Value, key: &str) -> impl Iterator<Item = &'v str> {
    value
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// Whether one PolicyRule allows a request (`RuleAllows`).
pub fn rule_allows(rule: &Value, request: &Request) -> bool {
    let verb_matches = |verb: &str| strings(rule, "verbs").any(|v| v == "*" || v == verb);
    match request {
        Request::Resource(a) => {
            if !verb_matches(&a.verb)
                || !strings(rule, "apiGroups").any(|g| g == "*" || g == a.api_group)
            {
                return false;
            }
            // The rule's resource must be `*`, the combined `resource/subresource`, or
            // `*/subresource`.
            let resource_matches = strings(rule, "resources").any(|resource| {
                if resource == "*" {
                    return true;
                }
                if a.subresource.is_empty() {
                    return resource == a.resource;
                }
                match resource.split_once('/') {
                    Some((base, sub)) => {
                        sub == a.subresource && (base == "*" || base == a.resource)
                    }
                    None => false,
                }
            });
            if !resource_matches {
                return false;
            }
            let mut names = strings(rule, "resourceNames").peekable();
            names.peek().is_none() || names.any(|name| name == a.name)
        }
        Request::NonResource { verb, path } => {
            verb_matches(verb)
                && strings(rule, "nonResourceURLs").any(|url| {
                    url == "*"
                        || url == path
                        || url
                            .strip_suffix('*')
                            .is_some_and(|prefix| path.starts_with(prefix))
                })
        }
    }
}
