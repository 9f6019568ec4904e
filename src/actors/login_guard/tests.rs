//! The login guard's decisions, step by step with made-up instants, and its single flight
//! through the actor.

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
    assert!(matches!(g.admit(HERE, &[8; 32], t0), Admission::Wait(w) if w > Duration::from_secs(800)), "locked out");
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

#[actix_web::test]
async fn a_burst_of_one_credential_is_checked_once_and_answered_by_that_check() {
    let addr = guard().start();
    let user = Proven::User(UserId::new());
    let ask = |key: u8| addr.send(MayTry { address: HERE, key: [key; 32] });
    assert_eq!(ask(1).await.expect("guard"), Admission::Check, "the first checks");
    // Twenty more of the same (more than the minute's ten and the lockout's five): they wait.
    let mut followers: Vec<_> = (0..20).map(|_| Box::pin(ask(1))).collect();
    let other = ask(2).await.expect("guard");
    assert_eq!(other, Admission::Check, "another credential is not held back by them");
    // Asked before `other` (the mailbox is in order) and not answered: they follow the check.
    for follower in followers.iter_mut() {
        assert!(futures_util::FutureExt::now_or_never(follower).is_none(), "a follower waits for the check");
    }
    addr.do_send(Tried { address: HERE, key: [1; 32], outcome: Outcome::Passed(user.clone()) });
    for answer in futures_util::future::join_all(followers).await {
        assert_eq!(answer.expect("guard"), Admission::Known(user.clone()));
    }

    // A wrong one in parallel: one check, one failure, and the repeats are refused without one.
    assert_eq!(ask(3).await.expect("guard"), Admission::Check);
    let repeats: Vec<_> = (0..5).map(|_| ask(3)).collect();
    addr.do_send(Tried { address: HERE, key: [3; 32], outcome: Outcome::Failed });
    for answer in futures_util::future::join_all(repeats).await {
        assert_eq!(answer.expect("guard"), Admission::Failed);
    }
    // Four failures more lock it out: the repeats were not counted as failures.
    for key in 4..7 {
        assert_eq!(ask(key).await.expect("guard"), Admission::Check, "failure {key}");
        addr.do_send(Tried { address: HERE, key: [key; 32], outcome: Outcome::Failed });
    }
    addr.do_send(Tried { address: HERE, key: [2; 32], outcome: Outcome::Failed });
    assert!(matches!(ask(9).await.expect("guard"), Admission::Wait(w) if w > Duration::from_secs(800)), "locked out");
}

#[actix_web::test]
async fn an_unfinished_check_hands_its_followers_a_check_of_their_own() {
    let addr = guard().start();
    let ask = |address: IpAddr| addr.send(MayTry { address, key: [1; 32] });
    assert_eq!(ask(HERE).await.expect("guard"), Admission::Check);
    let (a, b) = (ask(THERE), ask(HERE));
    // Both are waiting once a later message is answered (the mailbox is in order).
    assert_eq!(addr.send(MayTry { address: HERE, key: [2; 32] }).await.expect("guard"), Admission::Check);
    addr.do_send(Tried { address: HERE, key: [1; 32], outcome: Outcome::Unfinished });
    assert_eq!(a.await.expect("guard"), Admission::Check, "the first follower checks now");
    let mut b = Box::pin(b);
    // The second follows the first follower's check.
    let waited = tokio::time::timeout(Duration::from_millis(50), &mut b).await;
    assert!(waited.is_err(), "still following: {waited:?}");
    let user = Proven::User(UserId::new());
    addr.do_send(Tried { address: THERE, key: [1; 32], outcome: Outcome::Passed(user.clone()) });
    assert_eq!(b.await.expect("guard"), Admission::Known(user));
}

#[test]
fn a_check_whose_outcome_never_came_is_not_followed_forever() {
    let (mut g, t0) = (guard(), Instant::now());
    assert_eq!(g.begin(HERE, &[1; 32], t0), Decision::Answer(Admission::Check));
    assert_eq!(g.begin(HERE, &[1; 32], t0 + Duration::from_secs(1)), Decision::Follow);
    assert_eq!(g.begin(HERE, &[1; 32], t0 + IN_FLIGHT_FOR), Decision::Answer(Admission::Check), "checked anew");
}
