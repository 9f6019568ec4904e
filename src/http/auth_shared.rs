//! The login lockout across a cluster's nodes, for [`Authenticator`].
//!
//! Each node's [`LoginGuard`] limits the password checks of its own clients per minute: that
//! limit protects the node's CPU, so counting per node is right. The lockout protects the
//! passwords (and `CONDUIT_AUTH_TOKEN`): were it per node, a client spreading its guesses over
//! N nodes would get N times the guesses. So in cluster mode every check this node's guard
//! admits is also admitted by the nodes' shared ledger in the database
//! ([`crate::db::login_failures`]): a check running there counts as a failure until its
//! outcome, failures lock the address out on every node, a success clears them. A refusal
//! from the ledger is 429 `too_many_logins` as a local one is, and this node's guard is told.
//! Remembered credentials (no check) wait for a lockout other nodes made, too.
//!
//! One database transaction per check and one per outcome, recorded before the check is
//! answered (a check whose outcome is lost counts as a failure for a while, never as a
//! success); a credential
//! this node remembers (no check) costs one look at the address's lockout.
//!
//! [`LoginGuard`]: crate::actors::login_guard::LoginGuard

use std::net::IpAddr;
use std::time::Duration;

use super::auth::{too_many_logins, Authenticator};
use crate::actors::login_guard::{LockedElsewhere, Outcome, IN_FLIGHT_FOR, WAIT_FOR_RUNNING};
use crate::config::LoginLimits;
use crate::db::login_failures::{self, Standing, Window};
use crate::db::Store;
use crate::domain::time;
use crate::error::AppError;

fn window(limits: &LoginLimits) -> Window {
    Window {
        now: time::now(),
        since: time::ago(limits.lockout),
        running_since: time::ago(IN_FLIGHT_FOR),
        lockout_until: time::after(limits.lockout),
        limit: i64::from(limits.lockout_after),
    }
}

/// How long from now until `until` (RFC 3339); at least a second.
fn wait_until(until: &str) -> Duration {
    chrono::DateTime::parse_from_rfc3339(until)
        .ok()
        .and_then(|until| (until.with_timezone(&chrono::Utc) - chrono::Utc::now()).to_std().ok())
        .unwrap_or(Duration::ZERO)
        .max(Duration::from_secs(1))
}

/// A password check the shared ledger admitted. Its outcome is recorded there before the
/// check is answered ([`SharedCheck::finish`]), so every node sees at once what its client
/// was told; a check that ends otherwise (an error, the client leaving) is recorded as
/// unfinished in the background.
pub(super) struct SharedCheck {
    store: Store,
    limits: LoginLimits,
    id: String,
    address: String,
    finished: bool,
}

impl SharedCheck {
    pub(super) async fn finish(mut self, outcome: &Outcome) -> Result<(), AppError> {
        self.finished = true;
        let (limits, id, address, outcome) = (self.limits, self.id.clone(), self.address.clone(), outcome.clone());
        self.store
            .run(move |conn| match outcome {
                Outcome::Failed => login_failures::check_failed(conn, &id, &address, &window(&limits)).map(drop),
                Outcome::Passed(_) => login_failures::check_passed(conn, &id, &address),
                Outcome::Unfinished => login_failures::check_unfinished(conn, &id),
            })
            .await?;
        Ok(())
    }
}

impl Drop for SharedCheck {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let (store, id) = (self.store.clone(), self.id.clone());
        actix_web::rt::spawn(async move {
            if let Err(e) = store.run(move |conn| login_failures::check_unfinished(conn, &id)).await {
                // The row stays as a running check, counted as a failure until it is too old.
                tracing::warn!(error = %e, "an unfinished password check was not forgotten by the other nodes");
            }
        });
    }
}

impl Authenticator {
    /// In cluster mode, whether the nodes' ledger lets the client at `address` check a
    /// password now (429 otherwise, 503 when the database cannot say); `None` on one node.
    pub(super) async fn shared_begin(&self, store: &Store, address: IpAddr) -> Result<Option<SharedCheck>, AppError> {
        let Some(limits) = self.shared else { return Ok(None) };
        let (id, text) = (uuid::Uuid::new_v4().to_string(), address.to_string());
        let (row, at) = (id.clone(), text.clone());
        let standing = store.run(move |conn| login_failures::begin(conn, &row, &at, &window(&limits))).await?;
        self.refuse_unless_free(address, standing)?;
        Ok(Some(SharedCheck { store: store.clone(), limits, id, address: text, finished: false }))
    }

    /// In cluster mode, a guess at the configured token this node counted (`failed` or not),
    /// told to the nodes' ledger: 429 when it refuses the address now (the right token too).
    pub(super) async fn shared_compared(&self, store: &Store, address: IpAddr, failed: bool) -> Result<(), AppError> {
        let Some(limits) = self.shared else { return Ok(()) };
        let (id, text) = (uuid::Uuid::new_v4().to_string(), address.to_string());
        let standing =
            store.run(move |conn| login_failures::compared(conn, &id, &text, failed, &window(&limits))).await?;
        self.refuse_unless_free(address, standing)
    }

    /// In cluster mode, 429 when the client at `address` is locked out by what other nodes
    /// saw, for a credential this node remembers (which needs no check): the right password or
    /// token waits for the lockout on every node, as it does on the node that locked it out.
    pub(super) async fn shared_known(&self, store: &Store, address: IpAddr) -> Result<(), AppError> {
        if self.shared.is_none() {
            return Ok(());
        }
        let text = address.to_string();
        let until = store.run(move |conn| login_failures::locked_until(conn, &text, &time::now())).await?;
        match until {
            Some(until) => self.refuse_unless_free(address, Standing::LockedUntil(until)),
            None => Ok(()),
        }
    }

    fn refuse_unless_free(&self, address: IpAddr, standing: Standing) -> Result<(), AppError> {
        let wait = match standing {
            Standing::Free => return Ok(()),
            Standing::Busy => WAIT_FOR_RUNNING,
            Standing::LockedUntil(until) => {
                let wait = wait_until(&until);
                self.logins.do_send(LockedElsewhere { address, wait });
                wait
            }
        };
        Err(too_many_logins(wait))
    }
}
