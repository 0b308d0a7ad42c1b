//! Tests of label requirements and selectors: matching by each operator, the canonical text, and
//! selectors from `LabelSelector` objects.

use serde_json::json;

use super::*;

#[test]
fn equality_forms() {
    let l = json!({"app": "web", "tier": "front"});
    assert!(matches("app=web", l.clone()));
    assert!(matches("app==web", l.clone()));
    assert!(matches(" app = web ", l.clone()));
    assert!(!matches("app=db", l.clone()));
    assert!(matches("app!=db", l.clone()));
    assert!(!matches("app!=web", l.clone()));
    assert!(matches("missing!=x", l.clone()), "!= matches absent keys");
    assert!(matches("app=web,tier=front", l.clone()));
    assert!(!matches("app=web,tier=back", l));
}

#[test]
fn set_forms() {
    let l = json!({"env": "prod"});
    assert!(matches("env in (prod,staging)", l.clone()));
    assert!(matches("env in (staging, prod)", l.clone()));
    assert!(!matches("env in (dev)", l.clone()));
    assert!(matches("env notin (dev)", l.clone()));
    assert!(!matches("env notin (prod)", l.clone()));
    assert!(matches("other notin (prod)", l.clone()));
    assert!(!matches("other in (prod)", l));
}

#[test]
fn existence_forms() {
    let l = json!({"canary": ""});
    assert!(matches("canary", l.clone()));
    assert!(!matches("!canary", l.clone()));
    assert!(matches("!stable", l.clone()));
    assert!(!matches("stable", l.clone()));
    assert!(matches("canary=", l.clone()), "a=  selects the empty value");
    assert!(
        matches("canary in ()", l.clone()),
        "() holds the empty value"
    );
    assert!(matches("!stable,canary", l));
}

#[test]
fn integer_comparisons() {
    let l = json!({"rank": "5"});
    assert!(matches("rank>3", l.clone()));
    assert!(!matches("rank>5", l.clone()));
    assert!(matches("rank<6", l.clone()));
    assert!(!matches("absent<6", l));
    assert!(LabelSelector::parse("rank>x").is_err());
}

#[test]
fn empty_selector_matches_everything() {
    let selector = LabelSelector::parse("").unwrap();
    assert!(selector.is_empty());
    assert!(selector.matches(&Map::new()));
    assert!(selector.matches_object(&json!({"metadata": {"name": "x"}})));
}

#[test]
fn prefixed_keys() {
    assert!(matches(
        "app.kubernetes.io/name=web",
        json!({"app.kubernetes.io/name": "web"})
    ));
}

#[test]
fn label_selector_objects() {
    let selector = LabelSelector::from_object(&json!({
        "matchLabels": {"app": "web"},
        "matchExpressions": [
            {"key": "env", "operator": "In", "values": ["prod", "staging"]},
            {"key": "canary", "operator": "DoesNotExist"},
            {"key": "tier", "operator": "Exists"},
            {"key": "zone", "operator": "NotIn", "values": ["b"]}
        ]
    }))
    .unwrap();
    assert!(selector.matches(&labels(
        json!({"app": "web", "env": "prod", "tier": "x", "zone": "a"})
    )));
    assert!(!selector.matches(&labels(
        json!({"app": "web", "env": "prod", "tier": "x", "canary": "1"})
    )));
    assert!(!selector.matches(&labels(json!({"app": "web", "env": "dev", "tier": "x"}))));
    assert!(!selector.matches(&labels(json!({"app": "web", "env": "prod"}))));
    assert!(!selector.matches(&labels(
        json!({"app": "web", "env": "prod", "tier": "x", "zone": "b"})
    )));
}

#[test]
fn canonical_text() {
    let parsed =
        LabelSelector::parse("tier in (b, a),app==web,!canary,x notin (z),y,n>1,m<9,e!=f").unwrap();
    assert_eq!(
        parsed.to_string(),
        "app=web,!canary,e!=f,m<9,n>1,tier in (a,b),x notin (z),y"
    );
    assert_eq!(
        LabelSelector::parse(&parsed.to_string()).unwrap(),
        parsed,
        "round trip"
    );
    let object = LabelSelector::from_object(&json!({"matchLabels": {"b": "2", "a": "1"},
        "matchExpressions": [{"key": "c", "operator": "Exists"}]}))
    .unwrap();
    assert_eq!(object.to_string(), "a=1,b=2,c");
    assert_eq!(LabelSelector::default().to_string(), "");
    assert_eq!(LabelSelector::nothing().to_string(), "");
}

#[test]
fn null_and_empty_label_selector_objects() {
    assert!(
        !LabelSelector::from_object(&Value::Null)
            .unwrap()
            .matches(&Map::new())
    );
    assert!(
        LabelSelector::from_object(&json!({}))
            .unwrap()
            .matches(&Map::new())
    );
}

#[test]
fn bad_label_selector_objects() {
    let err = |v: Value| LabelSelector::from_object(&v).unwrap_err().to_string();
    assert_eq!(
        err(json!({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]})),
        "matchExpressions[0].operator: \"Gt\" is not a valid label selector operator"
    );
    assert_eq!(
        err(json!({"matchExpressions": [{"key": "a", "operator": "In"}]})),
        "values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be empty"
    );
    assert_eq!(
        err(json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]})),
        "values: Invalid value: []string{\"x\"}: values set must be empty for exists and does not exist"
    );
    assert!(
        err(json!({"matchLabels": {"-a": "b"}}))
            .starts_with("key: Invalid value: \"-a\": name part")
    );
    assert_eq!(
        err(json!({"matchLabels": {"a": "-b", "-c": "d"}}))
            .matches("Invalid value")
            .count(),
        1,
        "the first invalid requirement is reported"
    );
    assert!(err(json!({"matchLabels": {"a": 1}})).contains("matchLabels[a]"));
    assert!(err(json!("app=web")).contains("must be an object"));
}
