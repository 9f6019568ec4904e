//! The one error type every HTTP handler returns.
//!
//! Doctrine:
//! - Domain code (`domain`, `db`) has its own error types that say what went wrong in its terms;
//!   they become an [`AppError`] through `From`, which picks the status and a stable `code`.
//! - Every error response has the same body: `{"error":{"code":"snake_case","message":"..."}}`.
//!   `code` is for programs and never changes; `message` is a sentence for people.
//! - A 5xx never shows its cause to the client (it may hold paths or SQL); the cause chain is
//!   logged instead, once, where the response is built.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use serde::Serialize;
use utoipa::ToSchema;

#[derive(Debug)]
pub struct AppError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    /// What caused a server error; logged, never sent.
    pub cause: Option<String>,
    /// Seconds for a `Retry-After` header (a spent budget's reset, a lockout).
    pub retry_after: Option<i64>,
}

/// The body of every error response.
#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Serialize, ToSchema)]
pub struct ErrorDetail {
    /// Stable, machine-readable: `not_found`, `validation_failed`, `conflict`, ...
    pub code: String,
    /// A human sentence.
    pub message: String,
}

impl AppError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        AppError { status, code, message: message.into(), cause: None, retry_after: None }
    }

    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, "conflict", message)
    }

    pub fn forbidden(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, code, message)
    }

    pub fn validation(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, "validation_failed", message)
    }

    /// A failure of ours. The client sees a generic sentence; `cause` goes to the log.
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        AppError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            code: "internal_error",
            message: "The service hit an internal error; the details are in its log.".to_string(),
            cause: Some(cause.to_string()),
            retry_after: None,
        }
    }

    pub fn unavailable(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, code, message)
    }
}

impl std::fmt::Display for AppError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.status.as_u16(), self.code, self.message)
    }
}

impl ResponseError for AppError {
    fn status_code(&self) -> StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse {
        if let Some(cause) = &self.cause {
            // A cause may quote what a client sent: the log keeps a bounded part of it.
            let cause = bounded(cause, 2000);
            if self.status.is_server_error() {
                tracing::error!(code = self.code, %cause, "request failed");
            } else {
                tracing::debug!(code = self.code, %cause, "request refused");
            }
        }
        let mut response = error_response(self.status, self.code, &self.message);
        if let Some(seconds) = self.retry_after {
            if let Ok(value) = actix_web::http::header::HeaderValue::from_str(&seconds.to_string()) {
                response.headers_mut().insert(actix_web::http::header::RETRY_AFTER, value);
            }
        }
        response
    }
}

impl From<crate::domain::budget::Exhaustion> for AppError {
    /// A spent budget: 402, naming it and when it resets (also as `Retry-After`).
    fn from(spent: crate::domain::budget::Exhaustion) -> Self {
        AppError {
            retry_after: spent.retry_after(chrono::Utc::now()),
            ..AppError::new(StatusCode::PAYMENT_REQUIRED, "budget_exhausted", spent.message())
        }
    }
}

/// At most `max` bytes of `text` (on a character boundary), saying how much was left out.
pub fn bounded(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if text.len() <= max {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    std::borrow::Cow::Owned(format!("{}... ({} more bytes)", &text[..cut], text.len() - cut))
}

/// Builds the standard error body; also used by the middleware that rewrites
/// framework-generated errors (404 for unknown routes, 405, ...).
pub fn error_response(status: StatusCode, code: &str, message: &str) -> HttpResponse {
    HttpResponse::build(status)
        .json(ErrorBody { error: ErrorDetail { code: code.to_string(), message: message.to_string() } })
}

impl From<crate::db::StoreError> for AppError {
    /// Storage trouble is never a 500: the request was fine and may succeed later (503), except
    /// for what the database says about the request itself (a missing row, a conflict).
    fn from(e: crate::db::StoreError) -> Self {
        use crate::db::StoreError;
        match e {
            StoreError::NotFound => AppError::not_found("No such resource."),
            StoreError::Conflict(m) => {
                AppError { cause: Some(m), ..AppError::conflict("The request conflicts with what is stored.") }
            }
            StoreError::Rejected(m) => AppError {
                cause: Some(m),
                ..AppError::conflict("The database refused the change: something it refers to no longer exists.")
            },
            StoreError::Busy(m) => AppError {
                status: StatusCode::SERVICE_UNAVAILABLE,
                code: "database_busy",
                message: "The database is busy or cannot be reached; retry shortly.".to_string(),
                cause: Some(m),
                retry_after: None,
            },
            StoreError::Other(m) => AppError {
                status: StatusCode::SERVICE_UNAVAILABLE,
                code: "storage_unavailable",
                message: "Storage is unavailable right now (see the service's health and log); retry shortly."
                    .to_string(),
                cause: Some(m),
                retry_after: None,
            },
        }
    }
}

impl From<crate::domain::ids::InvalidId> for AppError {
    /// An id from the path that is not a UUID cannot name a row: the resource is not found
    /// (404), as for a well-formed id that names nothing.
    fn from(e: crate::domain::ids::InvalidId) -> Self {
        AppError::not_found(format!("No {} with id {:?}.", e.kind, e.raw))
    }
}

impl From<crate::domain::folders::PathError> for AppError {
    /// How a folder problem reads over HTTP, for every endpoint that takes a path.
    fn from(e: crate::domain::folders::PathError) -> Self {
        use crate::domain::folders::PathError;
        match e {
            PathError::Invalid(m) => AppError::validation(m),
            PathError::OutsideRoot => AppError::forbidden(
                "path_outside_root",
                "That path is outside the project root (CONDUIT_PROJECT_ROOT).",
            ),
            PathError::NotFound(m) => AppError::not_found(m),
            PathError::NotADirectory(m) => AppError::new(StatusCode::UNPROCESSABLE_ENTITY, "not_a_directory", m),
            PathError::Denied(m) => AppError::forbidden("permission_denied", m),
            // The message may hold the client's path: bounded before it is logged.
            PathError::Io(m) => AppError::internal(crate::domain::validate::clip(&m, 300)),
        }
    }
}

impl From<crate::db::writer::WriteError> for AppError {
    fn from(e: crate::db::writer::WriteError) -> Self {
        use crate::db::writer::WriteError;
        match e {
            WriteError::Rejected(m) => AppError {
                cause: Some(m),
                ..AppError::conflict("The database refused the change: something it refers to no longer exists.")
            },
            other => AppError {
                status: StatusCode::SERVICE_UNAVAILABLE,
                code: "storage_unavailable",
                message: "Storage is failing right now (see the service's health and log); retry shortly.".to_string(),
                cause: Some(other.to_string()),
                retry_after: None,
            },
        }
    }
}

pub type AppResult<T> = Result<T, AppError>;
