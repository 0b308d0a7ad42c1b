//! The messages whose JSON form is not their fields: Go types with their own JSON
//! marshalling in apimachinery and apiextensions (Time, MicroTime, Quantity, IntOrString,
//! RawExtension, FieldsV1, apiextensions' JSON and the JSONSchemaPropsOr* unions), and the
//! time formats they use. (meta/v1 Duration has its own JSON form too, but no field of a
//! served kind refers to it at v1.32; a test says so.)

use chrono::{DateTime, SecondsFormat, Utc};

/// A specially encoded message.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Special {
    /// meta/v1 Time: {seconds 1, nanos 2}; JSON RFC 3339 to the second, null when zero.
    Time,
    /// meta/v1 MicroTime: as Time, JSON to the microsecond.
    MicroTime,
    /// resource.Quantity (and QuantityValue): {string 1}; JSON the string.
    Quantity,
    /// intstr.IntOrString: {type 1, intVal 2, strVal 3}; JSON a number or a string.
    IntOrString,
    /// runtime.RawExtension, meta/v1 FieldsV1, apiextensions JSON: {raw 1} holding JSON.
    RawJson,
    /// JSONSchemaPropsOrArray: {schema 1, jSONSchemas 2}; JSON a schema or an array of them.
    SchemaOrArray,
    /// JSONSchemaPropsOrBool: {allows 1, schema 2}; JSON a bool or a schema.
    SchemaOrBool,
    /// JSONSchemaPropsOrStringArray: {schema 1, property 2}; JSON a schema or strings.
    SchemaOrStringArray,
}

const META: &str = "k8s.io.apimachinery.pkg.apis.meta.v1.";
const APIEXTENSIONS: &str = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.";

/// The special encoding of a message, by full name.
pub(super) fn special(name: &str) -> Option<Special> {
    if let Some(short) = name.strip_prefix(META) {
        return match short {
            "Time" => Some(Special::Time),
            "MicroTime" => Some(Special::MicroTime),
            "FieldsV1" => Some(Special::RawJson),
            _ => None,
        };
    }
    if let Some(short) = name.strip_prefix(APIEXTENSIONS) {
        return match short {
            "JSON" => Some(Special::RawJson),
            "JSONSchemaPropsOrArray" => Some(Special::SchemaOrArray),
            "JSONSchemaPropsOrBool" => Some(Special::SchemaOrBool),
            "JSONSchemaPropsOrStringArray" => Some(Special::SchemaOrStringArray),
            _ => None,
        };
    }
    match name {
        "k8s.io.apimachinery.pkg.api.resource.Quantity"
        | "k8s.io.apimachinery.pkg.api.resource.QuantityValue" => Some(Special::Quantity),
        "k8s.io.apimachinery.pkg.util.intstr.IntOrString" => Some(Special::IntOrString),
        "k8s.io.apimachinery.pkg.runtime.RawExtension" => Some(Special::RawJson),
        _ => None,
    }
}

/// Whether the message has a special encoding.
#[cfg(test)]
pub(super) fn is_special(name: &str) -> bool {
    special(name).is_some()
}

/// The JSON form of a Time (`micro`: MicroTime) from Unix seconds and nanoseconds; Go's
/// Time decoder drops the nanoseconds, MicroTime's keeps them to the microsecond.
pub(super) fn format_time(seconds: i64, nanos: i32, micro: bool) -> Result<String, String> {
    let nanos = if micro {
        u32::try_from(nanos).map_err(|_| format!("negative nanos {nanos}"))? / 1000 * 1000
    } else {
        0
    };
    let time = DateTime::<Utc>::from_timestamp(seconds, nanos)
        .ok_or_else(|| format!("time {seconds}s is out of range"))?;
    let precision = if micro {
        SecondsFormat::Micros
    } else {
        SecondsFormat::Secs
    };
    Ok(time.to_rfc3339_opts(precision, true))
}

/// Unix seconds and nanoseconds of an RFC 3339 time.
pub(super) fn parse_time(text: &str) -> Result<(i64, i32), String> {
    let time = DateTime::parse_from_rfc3339(text)
        .map_err(|e| format!("{text:?} is not an RFC 3339 time: {e}"))?;
    let nanos = i32::try_from(time.timestamp_subsec_nanos()).unwrap_or(0);
    Ok((time.timestamp(), nanos))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_format_as_go_does() {
        assert_eq!(
            format_time(1_700_000_000, 123_456_789, false).unwrap(),
            "2023-11-14T22:13:20Z"
        );
        assert_eq!(
            format_time(1_700_000_000, 123_456_789, true).unwrap(),
            "2023-11-14T22:13:20.123456Z"
        );
        assert_eq!(
            parse_time("2023-11-14T23:13:20.5+01:00").unwrap(),
            (1_700_000_000, 500_000_000)
        );
        assert!(format_time(i64::MAX, 0, false).is_err());
        assert!(parse_time("yesterday").is_err());
    }
}
