//! Tests of label and field selectors, by the same seams as the modules, with the helpers they share.

mod fields;
mod labels;
mod parser;
mod validation;

use serde_json::{Map, Value};

use super::*;

fn labels(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap()
}

fn matches(selector: &str, value: Value) -> bool {
    LabelSelector::parse(selector)
        .unwrap()
        .matches(&labels(value))
}
