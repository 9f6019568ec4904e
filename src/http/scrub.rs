//! API answers without secrets. Whatever a JSON or text answer carries, read from the store (in
//! `in_flight` mode the store keeps secrets) or from the machine (a command's output, a diff
//! of a `.env` file, a process's log), leaves without them. Streams are not answers: the bus
//! and the stream replays scrub their frames.

use actix_web::body::{self, BodySize, BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header;
use actix_web::middleware::Next;
use actix_web::web::{self, Bytes};
use actix_web::Error;

use super::AppState;
use crate::redact::Redactor;

/// Put in a response's extensions by the one answer that carries a secret on purpose (a new
/// API token, shown once): it leaves as it is.
#[derive(Debug, Clone, Copy)]
pub struct SecretByDesign;

/// Answers larger than this are scrubbed on the blocking pool, not the executor.
const INLINE_BYTES: usize = 64 * 1024;

pub async fn answers(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, Error> {
    let redacts = req.app_data::<web::Data<AppState>>().is_none_or(|state| state.settings.redaction.in_flight());
    let api = redacts && req.path().starts_with("/api/");
    let res = next.call(req).await?.map_into_boxed_body();
    let Some(json) = api.then(|| kind_of(&res)).flatten() else { return Ok(res) };
    if res.response().extensions().get::<SecretByDesign>().is_some() {
        return Ok(res);
    }
    if !matches!(res.response().body().size(), BodySize::Sized(_)) {
        return Ok(res);
    }
    let (req, res) = res.into_parts();
    let (res, answer) = res.into_parts();
    let bytes = body::to_bytes(answer).await.map_err(|e| actix_web::error::ErrorInternalServerError(e.to_string()))?;
    let clean = if bytes.len() > INLINE_BYTES {
        tokio::task::spawn_blocking(move || scrubbed(bytes, json))
            .await
            .map_err(actix_web::error::ErrorInternalServerError)?
    } else {
        scrubbed(bytes, json)
    };
    Ok(ServiceResponse::new(req, res.set_body(BoxBody::new(clean))))
}

/// `Some(true)` for JSON, `Some(false)` for plain text, `None` for what is left alone.
fn kind_of(res: &ServiceResponse<BoxBody>) -> Option<bool> {
    let content_type = res.headers().get(header::CONTENT_TYPE)?.to_str().ok()?;
    if content_type.starts_with("application/json") {
        Some(true)
    } else if content_type.starts_with("text/plain") {
        Some(false)
    } else {
        None
    }
}

fn scrubbed(bytes: Bytes, json: bool) -> Bytes {
    let Ok(text) = std::str::from_utf8(&bytes) else { return bytes };
    let redactor = Redactor::standard();
    let clean = if json { redactor.redact_json_text(text) } else { redactor.redact(text) };
    match clean {
        std::borrow::Cow::Borrowed(_) => bytes,
        std::borrow::Cow::Owned(clean) => Bytes::from(clean),
    }
}
