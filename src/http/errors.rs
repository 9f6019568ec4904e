//! Extractor configuration: every way a request can be malformed becomes the standard JSON
//! error with the right status, never actix's plain-text default.

use actix_web::body::{BodySize, BoxBody, MessageBody};
use actix_web::dev::{Decompress, ServiceRequest, ServiceResponse};
use actix_web::error::{InternalError, JsonPayloadError, PayloadError};
use actix_web::http::header::ContentEncoding;
use actix_web::http::{header, ConnectionType, StatusCode};
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

/// Every request body is read here, before any handler, whatever its type: no endpoint takes
/// more than [`MAX_BODY_BYTES`], so one that announces more (`Content-Length`) is refused with
/// 413 before a byte of it is read, and one that streams more (chunked) is refused as soon as
/// it passes the limit. Either way the connection is closed right after the 413 (see
/// [`closing`]): left to itself, actix would read a chunked body to its end after answering.
/// A compressed body (`Content-Encoding: gzip` or `deflate`) is decoded here, so the limit is on
/// what the handler would see.
///
/// JSON request bodies must also be objects. serde's derive accepts an array for a struct,
/// filling its fields by position (`["hi"]` would pass as `{"content": "hi"}`), so a JSON body
/// that is an array is refused (422) before any handler sees it. "JSON" is what the `Json`
/// extractor accepts (`application/json`, `text/json`, `application/*+json`), and the check is
/// made on the decoded body.
pub async fn objects_only(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, Error> {
    if declared_length(req.headers()).is_some_and(|len| len > MAX_BODY_BYTES as u64) {
        let unread = req.take_payload();
        let response = req.into_response(too_large().error_response());
        return Ok(closing(response, unread));
    }
    if has_body(req.headers()) {
        let decoding = decoded_encoding(req.headers());
        let mut payload = Decompress::from_headers(req.take_payload(), req.headers());
        let mut body = web::BytesMut::new();
        while let Some(chunk) = payload.next().await {
            let chunk = match chunk {
                Ok(chunk) => chunk,
                Err(e) => {
                    let refusal = AppError::bad_request("bad_request", format!("Could not read the request body: {e}"));
                    let response = req.into_response(refusal.error_response());
                    return Ok(closing(response, payload));
                }
            };
            if body.len() + chunk.len() > MAX_BODY_BYTES {
                let response = req.into_response(too_large().error_response());
                return Ok(closing(response, payload));
            }
            body.extend_from_slice(&chunk);
        }
        if is_json(&req) && body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
            let refusal = AppError::validation("Invalid request body: expected a JSON object, got an array");
            return Ok(req.into_response(refusal.error_response()));
        }
        if decoding {
            // The handler gets the decoded bytes: it must not decode them again.
            let headers = req.headers_mut();
            headers.remove(header::CONTENT_ENCODING);
            headers.insert(header::CONTENT_LENGTH, header::HeaderValue::from(body.len()));
        }
        req.set_payload(actix_web::dev::Payload::from(body.freeze()));
    }
    next.call(req).await.map(ServiceResponse::map_into_boxed_body)
}

/// The `Content-Length` a request announces, when it is a number.
fn declared_length(headers: &header::HeaderMap) -> Option<u64> {
    headers.get(header::CONTENT_LENGTH)?.to_str().ok()?.trim().parse().ok()
}

/// Whether the request carries a body: a `Content-Length` over 0, or chunked.
pub fn has_body(headers: &header::HeaderMap) -> bool {
    declared_length(headers).is_some_and(|len| len > 0) || headers.contains_key(header::TRANSFER_ENCODING)
}

/// Whether [`Decompress`] decodes this request's body (rather than passing it through).
fn decoded_encoding(headers: &header::HeaderMap) -> bool {
    headers
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<ContentEncoding>().ok())
        .is_some_and(|e| matches!(e, ContentEncoding::Gzip | ContentEncoding::Deflate))
}

/// A JSON body as the `Json` extractor sees one: subtype `json` or suffix `+json`.
fn is_json(req: &ServiceRequest) -> bool {
    match req.mime_type() {
        Ok(Some(mime)) => mime.subtype() == actix_web::mime::JSON || mime.suffix() == Some(actix_web::mime::JSON),
        _ => false,
    }
}

/// Makes `response` end its connection: `Connection: close`, and the request body that was
/// not read (`unread`) kept alive until the response is written. actix (h1) closes a
/// connection whose request body is unread and still wanted; once it is dropped instead, actix
/// reads a chunked body to its end to keep the connection, however large it is.
pub fn closing<H: 'static>(mut response: ServiceResponse<BoxBody>, unread: H) -> ServiceResponse<BoxBody> {
    response.response_mut().head_mut().set_connection_type(ConnectionType::Close);
    response.map_body(|_, body| BoxBody::new(Holding { body, _unread: Box::new(unread) }))
}

/// A response body that holds something (the unread request body) until it is dropped.
struct Holding {
    body: BoxBody,
    _unread: Box<dyn std::any::Any>,
}

impl MessageBody for Holding {
    type Error = Box<dyn std::error::Error>;

    fn size(&self) -> BodySize {
        self.body.size()
    }

    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<web::Bytes, Self::Error>>> {
        std::pin::Pin::new(&mut self.get_mut().body).poll_next(cx)
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
