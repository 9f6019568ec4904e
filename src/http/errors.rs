//! Extractor configuration: every way a request can be malformed becomes the standard JSON
//! error with the right status, never actix's plain-text default.

use actix_web::error::{InternalError, JsonPayloadError, PayloadError};
use actix_web::http::{header, StatusCode};
use actix_web::{web, HttpRequest, HttpResponse, ResponseError};

use crate::error::{error_response, AppError};

/// Largest request body accepted: 1 MiB.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

fn classify_json(err: &JsonPayloadError) -> AppError {
    match err {
        JsonPayloadError::ContentType => AppError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "This endpoint takes a JSON body: send it with `Content-Type: application/json`.",
        ),
        JsonPayloadError::Overflow { .. }
        | JsonPayloadError::OverflowKnownLength { .. }
        | JsonPayloadError::Payload(PayloadError::Overflow) => AppError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            format!("The request body is larger than the limit of {MAX_BODY_BYTES} bytes."),
        ),
        // A well-formed document of the wrong shape: unknown field, missing field, wrong type.
        JsonPayloadError::Deserialize(e) if e.is_data() => AppError::validation(format!("Invalid request body: {e}")),
        JsonPayloadError::Deserialize(e) => {
            AppError::bad_request("malformed_json", format!("The request body is not valid JSON: {e}"))
        }
        other => AppError::bad_request("bad_request", format!("Could not read the request body: {other}")),
    }
}

pub fn json_config() -> web::JsonConfig {
    web::JsonConfig::default().limit(MAX_BODY_BYTES).error_handler(|err, _req| {
        let response = classify_json(&err).error_response();
        InternalError::from_response(err, response).into()
    })
}

pub fn query_config() -> web::QueryConfig {
    web::QueryConfig::default().error_handler(|err, _req| {
        let response = AppError::bad_request("invalid_query", format!("Invalid query string: {err}")).error_response();
        InternalError::from_response(err, response).into()
    })
}

pub fn path_config() -> web::PathConfig {
    web::PathConfig::default().error_handler(|err, _req| {
        let response = AppError::not_found("No such resource.").error_response();
        InternalError::from_response(err, response).into()
    })
}

/// The app's fallback: no route matched the path.
pub async fn route_not_found(req: HttpRequest) -> HttpResponse {
    error_response(StatusCode::NOT_FOUND, "not_found", &format!("No route for {} {}.", req.method(), req.path()))
}

/// A resource's fallback: the path exists, the method does not.
pub fn method_not_allowed(allowed: String) -> impl Fn(HttpRequest) -> std::future::Ready<HttpResponse> + Clone {
    move |req: HttpRequest| {
        let mut response = error_response(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            &format!("{} is not allowed on {}; allowed: {allowed}.", req.method(), req.path()),
        );
        if let Ok(value) = header::HeaderValue::from_str(&allowed) {
            response.headers_mut().insert(header::ALLOW, value);
        }
        std::future::ready(response)
    }
}

/// Parses an id taken from the path. Anything that is not a UUID cannot name a row: 404.
pub fn parse_id(kind: &str, raw: &str) -> Result<String, AppError> {
    uuid::Uuid::try_parse(raw)
        .map(|u| u.hyphenated().to_string())
        .map_err(|_| AppError::not_found(format!("No {kind} with id {raw:?}.")))
}
