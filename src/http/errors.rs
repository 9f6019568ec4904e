//! Extractor configuration: every way a request can be malformed becomes the standard JSON
//! error with the right status, never actix's plain-text default.

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::error::{InternalError, JsonPayloadError, PayloadError};
use actix_web::http::{header, StatusCode};
use actix_web::middleware::Next;
use actix_web::{web, Error, HttpMessage, HttpRequest, HttpResponse, ResponseError};
use futures_util::StreamExt;

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
        | JsonPayloadError::Payload(PayloadError::Overflow) => too_large(),
        // A well-formed document of the wrong shape: unknown field, missing field, wrong type.
        JsonPayloadError::Deserialize(e) if e.is_data() => AppError::validation(format!("Invalid request body: {e}")),
        JsonPayloadError::Deserialize(e) => {
            AppError::bad_request("malformed_json", format!("The request body is not valid JSON: {e}"))
        }
        other => AppError::bad_request("bad_request", format!("Could not read the request body: {other}")),
    }
}

fn too_large() -> AppError {
    AppError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload_too_large",
        format!("The request body is larger than the limit of {MAX_BODY_BYTES} bytes."),
    )
}

/// JSON request bodies must be objects. serde's derive also accepts an array for a struct,
/// filling its fields by position (`["hi"]` would pass as `{"content": "hi"}`), so a JSON body
/// that is an array is refused (422) before any handler sees it.
pub async fn objects_only(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, Error> {
    let json = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.trim_start().to_ascii_lowercase().starts_with("application/json"));
    if json {
        let mut payload = req.take_payload();
        let mut body = web::BytesMut::new();
        while let Some(chunk) = payload.next().await {
            let chunk = chunk?;
            if body.len() + chunk.len() > MAX_BODY_BYTES {
                return Ok(req.into_response(too_large().error_response()));
            }
            body.extend_from_slice(&chunk);
        }
        if body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
            let refusal = AppError::validation("Invalid request body: expected a JSON object, got an array");
            return Ok(req.into_response(refusal.error_response()));
        }
        req.set_payload(actix_web::dev::Payload::from(body.freeze()));
    }
    next.call(req).await.map(ServiceResponse::map_into_boxed_body)
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
