//! Kubernetes `Status` bodies (`kind: Status`, `status: Failure`), the error shape kubectl
//! prints as `Error from server (Reason): message`.

use serde_json::{Value, json};

/// The `reason` Kubernetes gives a status `code`.
pub fn reason(code: u16) -> &'static str {
    match code {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        405 => "MethodNotAllowed",
        409 => "Conflict",
        413 => "RequestEntityTooLarge",
        415 => "UnsupportedMediaType",
        422 => "Invalid",
        429 => "TooManyRequests",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "InternalError",
    }
}

/// A failure `Status` with `code` and `message`.
pub fn failure(code: u16, message: &str) -> Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason(code),
        "code": code,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_carry_code_reason_and_message() {
        let status = failure(403, "no");
        assert_eq!(status["reason"], "Forbidden");
        assert_eq!(status["code"], 403);
        assert_eq!(status["message"], "no");
        assert_eq!(reason(599), "InternalError");
    }
}
