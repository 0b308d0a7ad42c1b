//! Tests of the label selector parser: syntax errors, keywords as words, empty members of value sets.

use serde_json::json;

use super::*;

#[test]
fn syntax_errors_are_worded_as_apimachinery() {
    let err = |s: &str| LabelSelector::parse(s).unwrap_err().to_string();
    assert_eq!(
        err("a in b"),
        "unable to parse requirement: found 'b' expected: '('"
    );
    assert_eq!(err("a,"), "found '', expected: identifier after ','");
    assert_eq!(err("!a=b"), "found '=', expected: ',' or 'end of string'");
    assert_eq!(
        err("a b"),
        "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"
    );
    assert_eq!(
        err("=a"),
        "found '=', expected: !, identifier, or 'end of string'"
    );
    assert_eq!(
        err("!"),
        "unable to parse requirement: found '', expected: identifier"
    );
    assert_eq!(
        err("a in (x"),
        "unable to parse requirement: found '', expected: ',' or ')'"
    );
    assert_eq!(
        err("a in (x=)"),
        "unable to parse requirement: found '=', expected: ',' or ')'"
    );
    assert_eq!(
        err("a in )"),
        "unable to parse requirement: found ')' expected: '('"
    );
    assert_eq!(err("a=b c"), "found 'c', expected: ',' or 'end of string'");
    assert_eq!(
        err("a=(b)"),
        "unable to parse requirement: found '(', expected: identifier"
    );
}

#[test]
fn keywords_are_words_where_keys_and_values_are_expected() {
    assert!(matches("in", json!({"in": "x"})));
    assert!(matches("a in (in,notin)", json!({"a": "notin"})));
    assert!(matches("notin=in", json!({"notin": "in"})));
}

#[test]
fn empty_members_of_value_sets() {
    assert!(matches("a in (,x)", json!({"a": ""})));
    assert!(matches("a in (x,)", json!({"a": ""})));
    assert!(matches("a in (x,,y)", json!({"a": ""})));
    assert!(!matches("a in (x,y)", json!({"a": ""})));
}
