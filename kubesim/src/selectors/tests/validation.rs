//! Tests of label key and value validation, through the parser.

use super::*;

#[test]
fn invalid_keys_and_values() {
    let err = |s: &str| LabelSelector::parse(s).unwrap_err().to_string();
    assert_eq!(
        err("-a=b"),
        "unable to parse requirement: : Invalid value: \"-a\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
    );
    assert_eq!(
        err("a=-x"),
        "unable to parse requirement: values[0][a]: Invalid value: \"-x\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
    );
    assert!(
        err("Bad_Prefix/a=b").contains(
            ": Invalid value: \"Bad_Prefix/a\": prefix part a lowercase RFC 1123 subdomain"
        )
    );
    assert!(err("/a").contains("prefix part must be non-empty"));
    assert!(err("a/b/c").contains("a qualified name must consist of"));
    assert!(
        err(&format!("{}=b", "k".repeat(64)))
            .contains("name part must be no more than 63 characters")
    );
    assert_eq!(
        err("a>x"),
        "unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be an integer"
    );
}
