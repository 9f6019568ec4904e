//! `LoginGuard`: who may try a credential a person chose now: a password, or a bearer that
//! could only be the configured `CONDUIT_AUTH_TOKEN` (see `http::auth`). It keeps, per client
//! address, the checks of the last minute and the failures of the last lockout period, the two
//! kinds together (alternating them does not buy more guesses):
//! - more than `per_minute` checks in a sliding minute: refused until the oldest leaves it;
//! - `lockout_after` failures within a lockout period: refused for the whole period;
//! - a success clears the address's failures;
//! - a check still running counts as a failure until its outcome is known, so clients that
//!   send many guesses at once cannot get more checks past the lockout than it allows;
//! - while a credential is being checked, the same credential again (a script's requests in
//!   parallel, each with the same HTTP Basic) waits for that check's outcome instead of
//!   starting another: it is checked once, counted once, and never refused as if it were a
//!   burst of guesses.
//!
//! A credential that passed is remembered for [`REMEMBERED_FOR`] (by a keyed hash, never the
//! password or token) with what it proved ([`Proven`]): a client sending HTTP Basic or the
//! configured token on every request is checked once, not each time, so it neither pays argon2
//! per request nor uses up the login limit.
//!
//! The guard's state is this actor's alone; the authenticator asks it ([`MayTry`]) before a
//! password check and tells it the outcome ([`Tried`]). A check that takes no time (the
//! configured token's constant-time comparison) is admitted and recorded in one message
//! ([`Compared`]), so it is never running and a burst of right tokens is not held back as
//! running checks would be.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::time::{Duration, Instant};

use actix::prelude::*;
use tokio::sync::oneshot;

use crate::config::LoginLimits;
use crate::domain::ids::UserId;

/// How long a credential that passed is taken without a new password check.
pub const REMEMBERED_FOR: Duration = Duration::from_secs(60);
const WINDOW: Duration = Duration::from_secs(60);
const SWEEP_EVERY: Duration = Duration::from_secs(60);
/// A check whose outcome never came (a lost message) stops counting after this long.
pub const IN_FLIGHT_FOR: Duration = Duration::from_secs(30);
/// How long an address waits while its running checks could lock it out.
pub const WAIT_FOR_RUNNING: Duration = Duration::from_secs(1);

/// A keyed hash of a user name and password, or of a bearer (see `http::auth`).
pub type CredentialKey = [u8; 32];

/// May `address` try `key` now?
#[derive(Message)]
#[rtype(result = "Admission")]
pub struct MayTry {
    pub address: IpAddr,
    pub key: CredentialKey,
}

/// What a credential that passed proved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Proven {
    /// A user's name and password.
    User(UserId),
    /// The configured `CONDUIT_AUTH_TOKEN`.
    ConfiguredToken,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// This credential passed within [`REMEMBERED_FOR`]: no check needed.
    Known(Proven),
    /// Check the password (the attempt is counted).
    Check,
    /// Refused for this long (`429` with `Retry-After`).
    Wait(Duration),
    /// The same credential was just checked and failed: no check (nor count) for a repeat.
    Failed,
}

/// The outcome of a check [`MayTry`] allowed.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Tried {
    pub address: IpAddr,
    pub key: CredentialKey,
    pub outcome: Outcome,
}

/// A check made before asking, in no time: admitted and recorded at once. The answer is
/// [`Admission::Check`] when `outcome` was counted (it stands), otherwise what [`MayTry`]
/// would have answered (a `Wait` whatever the outcome, so refusals tell nothing of it).
#[derive(Message)]
#[rtype(result = "Admission")]
pub struct Compared {
    pub address: IpAddr,
    pub key: CredentialKey,
    pub outcome: Outcome,
}

/// The address is locked out for `wait` by what other nodes saw (cluster mode, see
/// `http::auth_shared`): this node refuses it too, its remembered credentials included.
#[derive(Message)]
#[rtype(result = "()")]
pub struct LockedElsewhere {
    pub address: IpAddr,
    pub wait: Duration,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The credential proved this.
    Passed(Proven),
    /// No such user, another password, another token.
    Failed,
    /// The check did not finish (the client left, the database could not say): nothing was
    /// learnt, so it is neither a failure nor a success.
    Unfinished,
}

#[derive(Default)]
struct Address {
    checks: VecDeque<Instant>,
    failures: VecDeque<Instant>,
    /// When each check still running was admitted.
    running: VecDeque<Instant>,
    locked_until: Option<Instant>,
}

/// A credential being checked: since when, and the attempts with the same one waiting for its
/// outcome (each with its address).
struct Checking {
    since: Instant,
    followers: Vec<(IpAddr, oneshot::Sender<Admission>)>,
}

/// What the guard decides for one attempt.
#[derive(Debug, PartialEq, Eq)]
enum Decision {
    Answer(Admission),
    /// The credential is being checked: wait for that check's outcome.
    Follow,
}

pub struct LoginGuard {
    limits: LoginLimits,
    addresses: HashMap<IpAddr, Address>,
    passed: HashMap<CredentialKey, (Proven, Instant)>,
    checking: HashMap<CredentialKey, Checking>,
}

impl LoginGuard {
    pub fn new(limits: LoginLimits) -> LoginGuard {
        LoginGuard { limits, addresses: HashMap::new(), passed: HashMap::new(), checking: HashMap::new() }
    }

    /// [`LoginGuard::decide`] for an attempt about to check a password: one admitted is now the
    /// credential's running check, which the same credential's next attempts follow.
    fn begin(&mut self, address: IpAddr, key: &CredentialKey, now: Instant) -> Decision {
        let decision = self.decide(address, key, now);
        if decision == Decision::Answer(Admission::Check) {
            self.checking.insert(*key, Checking { since: now, followers: Vec::new() });
        }
        decision
    }

    /// Answers the attempts that waited for `key`'s check, now that its outcome is known.
    fn answer_followers(&mut self, key: CredentialKey, outcome: &Outcome, now: Instant) {
        let Some(checking) = self.checking.remove(&key) else { return };
        for (address, reply) in checking.followers {
            let admission = match outcome {
                Outcome::Passed(proven) => Admission::Known(proven.clone()),
                Outcome::Failed => Admission::Failed,
                // Nothing was learnt: as if they came now (one of them checks, the others follow).
                Outcome::Unfinished => match self.begin(address, &key, now) {
                    Decision::Answer(admission) => admission,
                    Decision::Follow => {
                        if let Some(running) = self.checking.get_mut(&key) {
                            running.followers.push((address, reply));
                        }
                        continue;
                    }
                },
            };
            let _ = reply.send(admission);
        }
    }

    /// [`LoginGuard::decide`] for an attempt that cannot follow (a comparison, made already).
    fn admit(&mut self, address: IpAddr, key: &CredentialKey, now: Instant) -> Admission {
        match self.decide(address, key, now) {
            Decision::Answer(admission) => admission,
            Decision::Follow => Admission::Wait(WAIT_FOR_RUNNING),
        }
    }

    /// A locked-out address waits, whatever it sends; a credential that passed is known; one
    /// being checked follows that check; any other attempt is counted against the address's
    /// minute.
    fn decide(&mut self, address: IpAddr, key: &CredentialKey, now: Instant) -> Decision {
        let limits = &self.limits;
        let entry = self.addresses.entry(address).or_default();
        if let Some(until) = entry.locked_until {
            if now < until {
                return Decision::Answer(Admission::Wait(until - now));
            }
            entry.locked_until = None;
            entry.failures.clear();
        }
        if let Some((proven, at)) = self.passed.get(key) {
            if now.duration_since(*at) < REMEMBERED_FOR {
                return Decision::Answer(Admission::Known(proven.clone()));
            }
        }
        match self.checking.get(key) {
            Some(checking) if now.duration_since(checking.since) < IN_FLIGHT_FOR => return Decision::Follow,
            // Its outcome never came: forgotten (its followers wait, 429), and this one checks.
            Some(_) => drop(self.checking.remove(key)),
            None => {}
        }
        forget_before(&mut entry.checks, now, WINDOW);
        if entry.checks.len() >= limits.per_minute as usize {
            let oldest = entry.checks.front().copied().unwrap_or(now);
            return Decision::Answer(Admission::Wait((oldest + WINDOW).saturating_duration_since(now)));
        }
        forget_before(&mut entry.running, now, IN_FLIGHT_FOR);
        forget_before(&mut entry.failures, now, limits.lockout);
        if entry.failures.len() + entry.running.len() >= limits.lockout_after as usize {
            // Were the running checks all to fail, this one would come after the lockout.
            return Decision::Answer(Admission::Wait(WAIT_FOR_RUNNING));
        }
        entry.checks.push_back(now);
        entry.running.push_back(now);
        Decision::Answer(Admission::Check)
    }

    fn tried(&mut self, address: IpAddr, key: CredentialKey, outcome: Outcome, now: Instant) {
        self.addresses.entry(address).or_default().running.pop_front();
        self.answer_followers(key, &outcome, now);
        let entry = self.addresses.entry(address).or_default();
        match outcome {
            Outcome::Unfinished => {}
            Outcome::Passed(proven) => {
                entry.failures.clear();
                self.passed.insert(key, (proven, now));
            }
            Outcome::Failed => {
                forget_before(&mut entry.failures, now, self.limits.lockout);
                entry.failures.push_back(now);
                if entry.failures.len() >= self.limits.lockout_after as usize {
                    entry.locked_until = Some(now + self.limits.lockout);
                    tracing::warn!(%address, failures = entry.failures.len(), lockout = ?self.limits.lockout, "too many failed password or token checks from one address: locked out");
                }
            }
        }
    }

    /// [`Compared`]: admitted as [`MayTry`] would, and its outcome recorded in the same step
    /// (never running, so never followed).
    fn compared(&mut self, address: IpAddr, key: CredentialKey, outcome: Outcome, now: Instant) -> Admission {
        let admission = self.admit(address, &key, now);
        if admission == Admission::Check {
            self.tried(address, key, outcome, now);
        }
        admission
    }

    /// Forgets what no longer counts, so the maps hold only recent addresses and credentials.
    fn sweep(&mut self, now: Instant) {
        let lockout = self.limits.lockout;
        self.passed.retain(|_, (_, at)| now.duration_since(*at) < REMEMBERED_FOR);
        // A check whose outcome never came: its followers' replies are dropped (they wait, 429).
        self.checking.retain(|_, c| now.duration_since(c.since) < IN_FLIGHT_FOR);
        self.addresses.retain(|_, a| {
            forget_before(&mut a.checks, now, WINDOW);
            forget_before(&mut a.failures, now, lockout);
            forget_before(&mut a.running, now, IN_FLIGHT_FOR);
            let locked = a.locked_until.is_some_and(|until| now < until);
            locked || !a.checks.is_empty() || !a.failures.is_empty() || !a.running.is_empty()
        });
    }
}

fn forget_before(times: &mut VecDeque<Instant>, now: Instant, span: Duration) {
    while times.front().is_some_and(|t| now.duration_since(*t) >= span) {
        times.pop_front();
    }
}

impl Actor for LoginGuard {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(SWEEP_EVERY, |guard, _| guard.sweep(Instant::now()));
    }
}

impl Handler<MayTry> for LoginGuard {
    type Result = ResponseFuture<Admission>;

    fn handle(&mut self, msg: MayTry, _ctx: &mut Context<Self>) -> Self::Result {
        match self.begin(msg.address, &msg.key, Instant::now()) {
            Decision::Answer(admission) => Box::pin(std::future::ready(admission)),
            Decision::Follow => {
                let (reply, outcome) = oneshot::channel();
                if let Some(checking) = self.checking.get_mut(&msg.key) {
                    checking.followers.push((msg.address, reply));
                }
                // A check whose outcome is lost drops the reply: wait as for running checks.
                Box::pin(async move { outcome.await.unwrap_or(Admission::Wait(WAIT_FOR_RUNNING)) })
            }
        }
    }
}

impl Handler<Compared> for LoginGuard {
    type Result = MessageResult<Compared>;

    fn handle(&mut self, msg: Compared, _ctx: &mut Context<Self>) -> Self::Result {
        MessageResult(self.compared(msg.address, msg.key, msg.outcome, Instant::now()))
    }
}

impl Handler<LockedElsewhere> for LoginGuard {
    type Result = ();

    fn handle(&mut self, msg: LockedElsewhere, _ctx: &mut Context<Self>) {
        let until = Instant::now() + msg.wait;
        let entry = self.addresses.entry(msg.address).or_default();
        entry.locked_until = Some(entry.locked_until.map_or(until, |locked| locked.max(until)));
    }
}

impl Handler<Tried> for LoginGuard {
    type Result = ();

    fn handle(&mut self, msg: Tried, _ctx: &mut Context<Self>) {
        self.tried(msg.address, msg.key, msg.outcome, Instant::now());
    }
}

#[cfg(test)]
mod tests;
