//! Timestamps as wardn writes them everywhere (store, API, App status, audit): RFC 3339 in UTC
//! with second precision, e.g. `2026-12-01T12:00:00Z`.

use jiff::Timestamp;

/// The current time, formatted by [`rfc3339`].
pub fn now_rfc3339() -> String {
    rfc3339(Timestamp::now())
}

/// A timestamp as RFC 3339 in UTC with second precision (sub-second digits dropped).
pub fn rfc3339(at: Timestamp) -> String {
    at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Unix seconds as [`rfc3339`]; `None` outside the range of timestamps.
pub fn unix_rfc3339(seconds: i64) -> Option<String> {
    Timestamp::from_second(seconds).ok().map(rfc3339)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_in_utc_with_z() {
        let at: Timestamp = "2026-12-01T12:34:56.789+02:00".parse().unwrap();
        assert_eq!(rfc3339(at), "2026-12-01T10:34:56Z");
        assert_eq!(now_rfc3339().len(), "2026-12-01T10:34:56Z".len());
    }
}
