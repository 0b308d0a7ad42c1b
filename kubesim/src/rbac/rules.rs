//! Whether one PolicyRule allows a request: verbs, API groups, resources
//! (`resource/subresource`, `*`, `*/subresource`), resourceNames and nonResourceURLs (exact or
//! `prefix*`).

use serde_json::Value;

use super::authorizer::strings;
use super::request::Request;

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
