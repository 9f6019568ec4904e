//! Logging: tracing with one span per request. Query strings are never logged (a WebSocket or
//! SSE client may carry its token there), nor are headers. Every line is written without the
//! secrets it may quote (an error naming a URL with its password, a CLI's stderr).

use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::Error;
use tracing::Instrument;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::EnvFilter;

use crate::redact::Redactor;

use crate::config::LogFormat;

/// Installs the global subscriber. Safe to call more than once (later calls are no-ops), so
/// tests can build several applications in one process.
pub fn init(level: &str, format: LogFormat, redacts: bool) {
    let filter = EnvFilter::try_new(level).unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(ScrubbedStderr { json: format == LogFormat::Json, redacts });
    let _ = match format {
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
        LogFormat::Pretty => builder.compact().try_init(),
    };
}

/// Standard error, one scrubbed log line at a time.
struct ScrubbedStderr {
    json: bool,
    /// Not in the `off` redaction mode.
    redacts: bool,
}

impl<'a> MakeWriter<'a> for ScrubbedStderr {
    type Writer = ScrubbedLine;

    fn make_writer(&'a self) -> ScrubbedLine {
        ScrubbedLine { json: self.json, redacts: self.redacts }
    }
}

/// The formatter hands over each event whole, in one `write`, so a secret is never split
/// between two calls.
struct ScrubbedLine {
    json: bool,
    redacts: bool,
}

impl std::io::Write for ScrubbedLine {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut err = std::io::stderr().lock();
        match std::str::from_utf8(buf) {
            Ok(_) if !self.redacts => err.write_all(buf)?,
            Ok(text) => {
                let redactor = Redactor::standard();
                let clean = if self.json { redactor.redact_json_text(text) } else { redactor.redact(text) };
                err.write_all(clean.as_bytes())?;
            }
            Err(_) => err.write_all(buf)?,
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// Middleware: a `request` span around each request, and one line when it completes.
pub async fn request_span(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, Error> {
    let request_id = uuid::Uuid::new_v4();
    // The path is the client's: a long one is clipped (an id-shaped segment is 36 characters).
    let path = crate::domain::validate::clip(req.path(), 256);
    let span = tracing::info_span!("request", %request_id, method = %req.method(), %path);
    let started = Instant::now();
    async move {
        let result = next.call(req).await;
        let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
        match &result {
            Ok(res) => tracing::info!(status = res.status().as_u16(), elapsed_ms, "request completed"),
            Err(e) => tracing::warn!(error = %e, elapsed_ms, "request failed"),
        }
        result
    }
    .instrument(span)
    .await
}
