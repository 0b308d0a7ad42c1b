//! Tests of field selectors: metadata and kind-specific fields, escapes, unsupported fields and
//! syntax errors.

use serde_json::json;

use super::*;

#[test]
fn field_selectors_on_metadata() {
    let object = json!({"metadata": {"name": "web", "namespace": "prod"}});
    let parse = |s: &str| FieldSelector::parse(s, "v1", "ConfigMap").unwrap();
    assert!(parse("metadata.name=web").matches(&object));
    assert!(parse("metadata.name==web").matches(&object));
    assert!(!parse("metadata.name!=web").matches(&object));
    assert!(parse("metadata.name=web,metadata.namespace=prod").matches(&object));
    assert!(!parse("metadata.name=web,metadata.namespace=dev").matches(&object));
    assert!(parse("metadata.namespace!=dev").matches(&object));
    assert!(parse("").matches(&object));
    let cluster_scoped = json!({"metadata": {"name": "n"}});
    assert!(parse("metadata.namespace=").matches(&cluster_scoped));
}

#[test]
fn field_selector_escapes() {
    let object = json!({"metadata": {"name": "a,b=c"}});
    let selector = FieldSelector::parse(r"metadata.name=a\,b\=c", "v1", "Pod").unwrap();
    assert_eq!(selector.requirements()[0].value, "a,b=c");
    assert!(selector.matches(&object));
}

#[test]
fn kind_specific_fields() {
    let pod = json!({"metadata": {"name": "p"}, "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}});
    let selector =
        FieldSelector::parse("spec.nodeName=n1,status.phase!=Failed", "v1", "Pod").unwrap();
    assert!(selector.matches(&pod));
    let host = FieldSelector::parse("spec.hostNetwork=false", "v1", "Pod").unwrap();
    assert!(host.matches(&pod), "an absent boolean compares as false");
    let secret = json!({"metadata": {"name": "s"}, "type": "Opaque"});
    assert!(
        FieldSelector::parse("type=Opaque", "v1", "Secret")
            .unwrap()
            .matches(&secret)
    );
    let event = json!({"involvedObject": {"name": "web", "kind": "Deployment"}});
    assert!(
        FieldSelector::parse(
            "involvedObject.name=web,involvedObject.kind=Deployment",
            "v1",
            "Event"
        )
        .unwrap()
        .matches(&event)
    );
}

#[test]
fn unsupported_fields_are_rejected_as_the_server_words_it() {
    let err = FieldSelector::parse("spec.foo=bar", "v1", "ConfigMap").unwrap_err();
    assert_eq!(err.to_string(), "field label not supported: spec.foo");
    let err = FieldSelector::parse("spec.nodeName=n", "apps/v1", "Deployment").unwrap_err();
    assert_eq!(err.to_string(), "field label not supported: spec.nodeName");
}

#[test]
fn field_value_escapes_are_checked() {
    let err = |s: &str| {
        FieldSelector::parse(s, "v1", "Pod")
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        err(r"metadata.name=a\x"),
        r"invalid field selector: invalid escape sequence: \x"
    );
    assert_eq!(
        err(r"metadata.name=a\"),
        r"invalid field selector: invalid escape sequence: \"
    );
    assert_eq!(
        err("metadata.name==a=b"),
        "invalid field selector: unescaped character in value: 61"
    );
    assert_eq!(
        FieldSelector::parse(r"metadata.name=a\\b", "v1", "Pod")
            .unwrap()
            .requirements()[0]
            .value,
        r"a\b"
    );
}

#[test]
fn syntax_errors_come_before_unsupported_fields() {
    let err = FieldSelector::parse("spec.foo=1,zzz", "v1", "ConfigMap").unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid selector: 'spec.foo=1,zzz'; can't understand 'zzz'"
    );
    let err = FieldSelector::parse("metadata.name =x", "v1", "ConfigMap").unwrap_err();
    assert_eq!(err.to_string(), "field label not supported: metadata.name ");
}

#[test]
fn field_terms_without_operator_are_rejected() {
    let err = FieldSelector::parse("metadata.name", "v1", "Pod").unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid selector: 'metadata.name'; can't understand 'metadata.name'"
    );
}
