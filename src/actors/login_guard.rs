//! `LoginGuard`: who may try a credential a person chose now: a password, or a bearer that
//! could only be the configured `CONDUIT_AUTH_TOKEN` (see `http::auth`). It keeps, per client
//! address, the checks of the last minute and the failures of the last lockout period, the two
//! kinds together (alternating them does not buy more guesses):
//! - more than `per_minute` checks in a sliding minute: refused until the oldest leaves it;
//! - `lockout_after` failures within a lockout period: refused for the whole period;
//! - a success clears the address's failures;
//! - a check still running counts as a failure until its outcome is known, so clients that
//!   send many guesses at once cannot get more checks past the lockout than it allows.
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

use crate::config::LoginLimits;
use crate::domain::ids::UserId;

/// How long a credential that passed is taken without a new password check.
pub const REMEMBERED_FOR: Duration = Duration::from_secs(60);
const WINDOW: Duration = Duration::from_secs(60);
const SWEEP_EVERY: Duration = Duration::from_secs(60);
/// A check whose outcome never came (a lost message) stops counting after this long.
const IN_FLIGHT_FOR: Duration = Duration::from_secs(30);
/// How long an address waits while its running checks could lock it out.
const WAIT_FOR_RUNNING: Duration = Duration::from_secs(1);

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

pub struct LoginGuard {
    limits: LoginLimits,
    addresses: HashMap<IpAddr, Address>,
    passed: HashMap<CredentialKey, (Proven, Instant)>,
}

impl LoginGuard {
    pub fn new(limits: LoginLimits) -> LoginGuard {
        LoginGuard { limits, addresses: HashMap::new(), passed: HashMap::new() }
    }

    /// A locked-out address waits, whatever it sends; a credential that passed is known; any
    /// other attempt is counted against the address's minute.
    fn admit(&mut self, address: IpAddr, key: &CredentialKey, now: Instant) -> Admission {
        let limits = &self.limits;
        let entry = self.addresses.entry(address).or_default();
        if let Some(until) = entry.locked_until {
            if now < until {
                return Admission::Wait(until - now);
            }
            entry.locked_until = None;
            entry.failures.clear();
        }
        if let Some((proven, at)) = self.passed.get(key) {
            if now.duration_since(*at) < REMEMBERED_FOR {
                return Admission::Known(proven.clone());
            }
        }
        forget_before(&mut entry.checks, now, WINDOW);
        if entry.checks.len() >= limits.per_minute as usize {
            let oldest = entry.checks.front().copied().unwrap_or(now);
            return Admission::Wait((oldest + WINDOW).saturating_duration_since(now));
        }
        forget_before(&mut entry.running, now, IN_FLIGHT_FOR);
        forget_before(&mut entry.failures, now, limits.lockout);
        if entry.failures.len() + entry.running.len() >= limits.lockout_after as usize {
            // Were the running checks all to fail, this one would come after the lockout.
            return Admission::Wait(WAIT_FOR_RUNNING);
        }
        entry.checks.push_back(now);
        entry.running.push_back(now);
        Admission::Check
    }

    fn tried(&mut self, address: IpAddr, key: CredentialKey, outcome: Outcome, now: Instant) {
        let entry = self.addresses.entry(address).or_default();
        entry.running.pop_front();
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

    /// [`Compared`]: admitted as [`MayTry`] would, and its outcome recorded in the same step.
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
    type Result = MessageResult<MayTry>;

    fn handle(&mut self, msg: MayTry, _ctx: &mut Context<Self>) -> Self::Result {
        MessageResult(self.admit(msg.address, &msg.key, Instant::now()))
    }
}

impl Handler<Compared> for LoginGuard {
    type Result = MessageResult<Compared>;

    fn handle(&mut self, msg: Compared, _ctx: &mut Context<Self>) -> Self::Result {
        MessageResult(self.compared(msg.address, msg.key, msg.outcome, Instant::now()))
    }
}

impl Handler<Tried> for LoginGuard {
    type Result = ();

    fn handle(&mut self, msg: Tried, _ctx: &mut Context<Self>) {
        self.tried(msg.address, msg.key, msg.outcome, Instant::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard() -> LoginGuard {
        LoginGuard::new(LoginLimits { per_minute: 10, lockout_after: 5, lockout: Duration::from_secs(900) })
    }

    const HERE: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);
    const THERE: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 2));

    #[test]
    fn five_failures_lock_an_address_out_for_the_lockout_and_not_another() {
        let (mut g, t0) = (guard(), Instant::now());
        for i in 0..5 {
            assert_eq!(g.admit(HERE, &[i; 32], t0), Admission::Check);
            g.tried(HERE, [i; 32], Outcome::Failed, t0);
        }
        assert_eq!(g.admit(HERE, &[9; 32], t0 + Duration::from_secs(1)), Admission::Wait(Duration::from_secs(899)));
        assert_eq!(g.admit(THERE, &[9; 32], t0), Admission::Check, "another address");
        g.tried(THERE, [9; 32], Outcome::Passed(Proven::User(UserId::new())), t0);
        let locked = g.admit(HERE, &[9; 32], t0 + Duration::from_secs(2));
        assert_eq!(locked, Admission::Wait(Duration::from_secs(898)), "a credential known elsewhere waits too");
        let after = t0 + Duration::from_secs(900);
        assert_eq!(g.admit(HERE, &[9; 32], after), Admission::Check, "the lockout ends");
        g.tried(HERE, [9; 32], Outcome::Failed, after);
        assert_eq!(g.admit(HERE, &[8; 32], after), Admission::Check, "its failures were forgiven with it");
    }

    #[test]
    fn more_than_ten_checks_a_minute_wait_for_the_oldest_to_leave_the_window() {
        let (mut g, t0) = (guard(), Instant::now());
        let user = Proven::User(UserId::new());
        for i in 0..10u64 {
            let at = t0 + Duration::from_secs(i);
            assert_eq!(g.admit(HERE, &[i as u8; 32], at), Admission::Check);
            // Successes clear failures, so only the rate stops them.
            g.tried(HERE, [i as u8; 32], Outcome::Passed(user.clone()), at);
        }
        assert_eq!(g.admit(HERE, &[99; 32], t0 + Duration::from_secs(20)), Admission::Wait(Duration::from_secs(40)));
        assert_eq!(g.admit(HERE, &[99; 32], t0 + Duration::from_secs(60)), Admission::Check, "a slot is free");
    }

    #[test]
    fn a_credential_that_passed_is_known_for_a_minute_without_a_check() {
        let (mut g, t0) = (guard(), Instant::now());
        let user = Proven::User(UserId::new());
        assert_eq!(g.admit(HERE, &[1; 32], t0), Admission::Check);
        g.tried(HERE, [1; 32], Outcome::Passed(user.clone()), t0);
        for s in 1..30 {
            assert_eq!(g.admit(HERE, &[1; 32], t0 + Duration::from_secs(s)), Admission::Known(user.clone()));
        }
        assert_eq!(g.addresses[&HERE].checks.len(), 1, "known answers are not counted");
        assert_eq!(g.admit(HERE, &[1; 32], t0 + REMEMBERED_FOR), Admission::Check);
    }

    #[test]
    fn running_checks_count_as_failures_until_their_outcome_is_known() {
        let (mut g, t0) = (guard(), Instant::now());
        for i in 0..5 {
            assert_eq!(g.admit(HERE, &[i; 32], t0), Admission::Check, "check {i} starts");
        }
        assert_eq!(g.admit(HERE, &[7; 32], t0), Admission::Wait(WAIT_FOR_RUNNING), "five running could lock it out");
        g.tried(HERE, [0; 32], Outcome::Unfinished, t0);
        assert_eq!(g.admit(HERE, &[7; 32], t0), Admission::Check, "an unfinished check counts for nothing");
        for i in 1..6 {
            g.tried(HERE, [i; 32], Outcome::Failed, t0);
        }
        assert!(
            matches!(g.admit(HERE, &[8; 32], t0), Admission::Wait(w) if w > Duration::from_secs(800)),
            "locked out"
        );
        assert_eq!(g.addresses[&HERE].checks.len(), 6, "no more than five failures got their check");
    }

    #[test]
    fn a_lost_outcome_stops_counting() {
        let (mut g, t0) = (guard(), Instant::now());
        for i in 0..5 {
            g.admit(HERE, &[i; 32], t0);
        }
        assert_eq!(g.admit(HERE, &[7; 32], t0 + IN_FLIGHT_FOR), Admission::Check);
    }

    #[test]
    fn the_sweep_forgets_quiet_addresses_and_keeps_locked_ones() {
        let (mut g, t0) = (guard(), Instant::now());
        g.admit(HERE, &[1; 32], t0);
        for _ in 0..5 {
            g.admit(THERE, &[2; 32], t0);
            g.tried(THERE, [2; 32], Outcome::Failed, t0);
        }
        g.sweep(t0 + Duration::from_secs(120));
        assert!(!g.addresses.contains_key(&HERE) && g.addresses.contains_key(&THERE));
        g.sweep(t0 + Duration::from_secs(901));
        assert!(g.addresses.is_empty());
    }

    #[test]
    fn compared_guesses_share_the_password_lockout_and_a_right_token_is_known() {
        let (mut g, t0) = (guard(), Instant::now());
        let token = Proven::ConfiguredToken;
        assert_eq!(g.compared(HERE, [1; 32], Outcome::Passed(token.clone()), t0), Admission::Check);
        for i in 0..20 {
            // A burst of the right token: known at once, never counted, never running.
            assert_eq!(
                g.compared(HERE, [1; 32], Outcome::Passed(token.clone()), t0),
                Admission::Known(token.clone()),
                "{i}"
            );
        }
        assert_eq!((g.addresses[&HERE].checks.len(), g.addresses[&HERE].running.len()), (1, 0));
        for i in 2..5 {
            assert_eq!(g.compared(HERE, [i; 32], Outcome::Failed, t0), Admission::Check, "guess {i}");
        }
        assert_eq!(g.admit(HERE, &[7; 32], t0), Admission::Check, "a password check after three wrong guesses");
        g.tried(HERE, [7; 32], Outcome::Failed, t0);
        assert_eq!(g.compared(HERE, [8; 32], Outcome::Failed, t0), Admission::Check, "the fifth failure");
        let wait = Admission::Wait(g.limits.lockout);
        assert_eq!(g.compared(HERE, [9; 32], Outcome::Failed, t0), wait, "locked out");
        assert_eq!(g.compared(HERE, [1; 32], Outcome::Passed(token), t0), wait, "the right token waits too");
        assert_eq!(g.admit(HERE, &[6; 32], t0), wait, "and so do passwords");
        assert_eq!(g.addresses[&HERE].failures.len(), 5, "what waits is not counted");
    }
}
