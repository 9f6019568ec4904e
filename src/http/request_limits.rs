//! The access guard's limits on what one client may ask (see `actors::request_limits`):
//! writes per client address, and live streams per credential. A counted stream's slot rides
//! in its response body ([`Held`]), so it is freed exactly when the connection's body is dropped,
//! however the stream ends (client gone, server closing, error).

use std::pin::Pin;
use std::task::{Context, Poll};

use actix::Addr;
use actix_web::body::{BodySize, BoxBody, MessageBody};
use actix_web::dev::ServiceRequest;
use actix_web::http::{header, Method, StatusCode};
use actix_web::web::Bytes;

use crate::actors::request_limits::{MayWrite, OpenStream, RequestLimits, StreamSlot};
use crate::domain::access::Identity;
use crate::error::AppError;

/// The limits as the guard applies them.
#[derive(Debug, Clone)]
pub struct Limits {
    pub actor: Addr<RequestLimits>,
    /// Whether loopback clients' writes are counted too.
    pub limit_loopback: bool,
}

impl Limits {
    /// `Err` (429 `too_many_writes`) when `req` changes state and its address sent too many
    /// writes this minute. Reads are never counted.
    pub async fn check_write(&self, req: &ServiceRequest) -> Result<(), AppError> {
        if matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS) {
            return Ok(());
        }
        let address = super::auth::client(req.peer_addr());
        if address.is_loopback() && !self.limit_loopback {
            return Ok(());
        }
        let verdict = self.actor.send(MayWrite { address }).await;
        match verdict.map_err(|e| AppError::internal(format!("the request limits are gone: {e}")))? {
            Ok(()) => Ok(()),
            Err(wait) => {
                let seconds = crate::domain::time::seconds_rounded_up(wait).max(1);
                let mut refusal = AppError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    "too_many_writes",
                    format!("Too many state-changing requests from this address: try again in {seconds} s."),
                );
                refusal.retry_after = Some(seconds as i64);
                Err(refusal)
            }
        }
    }

    /// The slot that counts `req`'s stream against `identity`'s credential; `Ok(None)` when
    /// `req` opens no stream or the identity holds no credential (open mode, a peer node).
    /// `Err` (429 `too_many_streams`) when the credential holds as many as it may.
    pub async fn open_stream(&self, req: &ServiceRequest, identity: &Identity) -> Result<Option<StreamSlot>, AppError> {
        // Asked first: most requests open no stream, and need no holder built for them.
        if !opens_stream(req) {
            return Ok(None);
        }
        let Some(holder) = holder(identity) else { return Ok(None) };
        let verdict = self.actor.send(OpenStream { holder }).await;
        match verdict.map_err(|e| AppError::internal(format!("the request limits are gone: {e}")))? {
            Ok(slot) => Ok(Some(slot)),
            Err(limit) => Err(AppError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "too_many_streams",
                format!(
                    "This credential already holds {limit} open WebSocket connections and event streams \
                     (CONDUIT_STREAMS_PER_CREDENTIAL): close one first."
                ),
            )),
        }
    }
}

/// A WebSocket upgrade, or a read of an SSE stream (`GET .../stream`).
fn opens_stream(req: &ServiceRequest) -> bool {
    let upgrading = req
        .headers()
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    upgrading || (req.method() == Method::GET && req.path().ends_with("/stream"))
}

/// The credential streams are counted against: each token, sign-in and the configured token
/// on its own; a user's password (HTTP Basic) for that user.
fn holder(identity: &Identity) -> Option<String> {
    match identity {
        Identity::Local | Identity::Peer => None,
        Identity::Admin => Some("configured-token".into()),
        Identity::User { session: Some(session), .. } => Some(format!("sign-in:{session}")),
        Identity::User { id, session: None } => Some(format!("user:{id}")),
        Identity::Token { id, .. } => Some(format!("token:{id}")),
        Identity::Session { session, .. } => Some(format!("session:{session}")),
    }
}

/// A response body that keeps its stream's slot as long as it lives.
pub struct Held {
    body: BoxBody,
    _slot: StreamSlot,
}

impl Held {
    pub fn new(body: BoxBody, slot: StreamSlot) -> Held {
        Held { body, _slot: slot }
    }
}

impl MessageBody for Held {
    type Error = <BoxBody as MessageBody>::Error;

    fn size(&self) -> BodySize {
        self.body.size()
    }

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes, Self::Error>>> {
        // `Held` is Unpin (a BoxBody and a slot), so the body can be reached through it.
        Pin::new(&mut self.get_mut().body).poll_next(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::access::Scope;
    use crate::domain::ids::{LoginSessionId, TokenId, UserId};

    #[test]
    fn streams_are_held_by_credentials_not_by_the_open_mode_or_peers() {
        assert_eq!(holder(&Identity::Local), None);
        assert_eq!(holder(&Identity::Peer), None);
        assert_eq!(holder(&Identity::Admin).as_deref(), Some("configured-token"));
        let (user, session, token) = (UserId::new(), LoginSessionId::new(), TokenId::new());
        let signed_in = Identity::User { id: user.clone(), session: Some(session.clone()) };
        assert_eq!(holder(&signed_in), Some(format!("sign-in:{session}")));
        assert_eq!(holder(&Identity::User { id: user.clone(), session: None }), Some(format!("user:{user}")));
        let bound = Identity::Token { id: token.clone(), scope: Scope::Read, project: None };
        assert_eq!(holder(&bound), Some(format!("token:{token}")));
    }
}
