//! The dashboard's sign-in: `POST /api/auth/login` sets an HttpOnly, SameSite=Strict cookie
//! that stands for the user on every route until it is logged out, revoked (from another
//! sign-in too) or its user deleted; the form shares HTTP Basic's limits and lockout.

use std::time::Duration;

use serde_json::{json, Value};

use crate::helpers::error_code;
use crate::support::service::{fake_cli, ServiceConfig, TestService};

const PASSWORD: &str = "correct horse battery";

fn with_user(config: ServiceConfig) -> TestService {
    TestService::start(config.env("CONDUIT_ADMIN_USER", "ada").env("CONDUIT_ADMIN_PASSWORD", PASSWORD))
}

async fn login(service: &TestService, name: &str, password: &str) -> reqwest::Response {
    let body = json!({"name": name, "password": password});
    service.client.post(service.url("/api/auth/login")).json(&body).send().await.expect("request")
}

/// The `Set-Cookie` header of an answer.
fn set_cookie(res: &reqwest::Response) -> String {
    res.headers().get("set-cookie").and_then(|v| v.to_str().ok()).expect("a Set-Cookie header").to_string()
}

/// The `name=value` pair of a `Set-Cookie` header, as a `Cookie` header sends it back.
fn pair(set: &str) -> String {
    set.split(';').next().unwrap_or_default().to_string()
}

/// Signs `name` in and answers the cookie to send back.
async fn signed_in(service: &TestService, name: &str, password: &str) -> String {
    let res = login(service, name, password).await;
    assert_eq!(res.status().as_u16(), 200, "signed in as {name}");
    pair(&set_cookie(&res))
}

async fn with_cookie(service: &TestService, method: reqwest::Method, path: &str, cookie: &str) -> reqwest::Response {
    service.client.request(method, service.url(path)).header("cookie", cookie).send().await.expect("request")
}

async fn get(service: &TestService, path: &str, cookie: &str) -> reqwest::Response {
    with_cookie(service, reqwest::Method::GET, path, cookie).await
}

/// Adds the user `name` straight to the database.
fn add_user(service: &TestService, name: &str) -> String {
    use conduit::db::schema::users;
    use diesel::prelude::*;
    let id = uuid::Uuid::new_v4().to_string();
    let hash = conduit::domain::credentials::hash_password(PASSWORD).expect("a hash");
    let mut conn = crate::support::database::connect(&service.dir.path().join("data/conduit.db"));
    diesel::insert_into(users::table)
        .values((
            users::id.eq(&id),
            users::name.eq(name),
            users::password_hash.eq(hash),
            users::created_at.eq("2026-12-11T00:00:00.000Z"),
        ))
        .execute(&mut conn)
        .expect("the user is added");
    id
}

#[actix_web::test]
async fn a_sign_in_sets_a_strict_http_only_cookie_that_works_until_logout() {
    let service = with_user(ServiceConfig::new(fake_cli()));
    let res = login(&service, "ada", PASSWORD).await;
    assert_eq!(res.status().as_u16(), 200);
    let set = set_cookie(&res);
    let body: Value = res.json().await.expect("json");
    let secret = pair(&set).strip_prefix("conduit_session=").expect("the cookie's name").to_string();
    assert_eq!(secret.len(), 64, "{set}");
    assert_eq!(
        set,
        format!("conduit_session={secret}; HttpOnly; SameSite=Strict; Path=/; Max-Age=604800"),
        "seven days, no Secure by default"
    );
    assert_eq!(body["user"]["name"], "ada", "{body}");
    assert!(body["user"]["id"].is_string() && body["session"]["id"].is_string(), "{body}");
    assert!(body["session"]["expires_at"].as_str() > body["session"]["created_at"].as_str(), "{body}");
    assert!(!body.to_string().contains(&secret), "the secret is in the cookie only");

    // Only the secret's SHA-256 is stored.
    {
        use conduit::db::schema::login_sessions;
        use diesel::prelude::*;
        let mut conn = crate::support::database::connect(&service.dir.path().join("data/conduit.db"));
        let hashes: Vec<String> =
            login_sessions::table.select(login_sessions::secret_hash).load(&mut conn).expect("sessions");
        assert_eq!(hashes, vec![conduit::domain::credentials::token_hash(&secret)]);
    }

    let cookie = pair(&set);
    assert_eq!(get(&service, "/api/projects", &cookie).await.status().as_u16(), 200, "the cookie signs in");
    let me: Value = get(&service, "/api/auth/me", &cookie).await.json().await.expect("json");
    assert_eq!((me["kind"].as_str(), me["user"]["name"].as_str()), (Some("user"), Some("ada")), "{me}");
    assert_eq!((me["scope"].as_str(), &me["session_id"]), (Some("admin"), &body["session"]["id"]), "{me}");
    assert_eq!(error_code(service.get("/api/auth/me").await, 401).await, "unauthorized", "no cookie, nobody");

    let res = with_cookie(&service, reqwest::Method::POST, "/api/auth/logout", &cookie).await;
    assert_eq!(res.status().as_u16(), 204);
    assert_eq!(set_cookie(&res), "conduit_session=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0");
    assert_eq!(error_code(get(&service, "/api/projects", &cookie).await, 401).await, "unauthorized");
    assert_eq!(error_code(get(&service, "/api/auth/me", &cookie).await, 401).await, "unauthorized");
    // Logging out without a sign-in changes nothing.
    let basic = service.client.post(service.url("/api/auth/logout")).basic_auth("ada", Some(PASSWORD));
    assert_eq!(basic.send().await.expect("request").status().as_u16(), 204);
}

#[actix_web::test]
async fn the_cookie_is_secure_and_its_life_as_configured() {
    let config =
        ServiceConfig::new(fake_cli()).env("CONDUIT_SECURE_COOKIES", "true").env("CONDUIT_LOGIN_SESSION_MS", "120500");
    let service = with_user(config);
    let res = login(&service, "ada", PASSWORD).await;
    let set = set_cookie(&res);
    assert!(set.ends_with("; HttpOnly; SameSite=Strict; Path=/; Max-Age=121; Secure"), "{set}");
    let res = with_cookie(&service, reqwest::Method::POST, "/api/auth/logout", &pair(&set)).await;
    assert!(set_cookie(&res).ends_with("; Max-Age=0; Secure"), "cleared with the same flags");
}

#[actix_web::test]
async fn a_sign_in_revoked_from_another_stops_at_once() {
    let service = with_user(ServiceConfig::new(fake_cli()));
    let (a, b) = (signed_in(&service, "ada", PASSWORD).await, signed_in(&service, "ada", PASSWORD).await);
    let me_a: Value = get(&service, "/api/auth/me", &a).await.json().await.expect("json");
    let a_id = me_a["session_id"].as_str().expect("a session id").to_string();

    let list: Vec<Value> = get(&service, "/api/auth/sessions", &b).await.json().await.expect("json");
    assert_eq!(list.len(), 2, "{list:?}");
    let current: Vec<&Value> = list.iter().filter(|s| s["current"] == true).collect();
    assert_eq!(current.len(), 1, "{list:?}");
    assert_ne!(current[0]["id"].as_str(), Some(a_id.as_str()), "B is current, not A");
    assert!(list.iter().all(|s| s["address"] == "127.0.0.1" && s["last_seen_at"].is_string()), "{list:?}");

    let res = with_cookie(&service, reqwest::Method::DELETE, &format!("/api/auth/sessions/{a_id}"), &b).await;
    assert_eq!(res.status().as_u16(), 204);
    assert_eq!(error_code(get(&service, "/api/projects", &a).await, 401).await, "unauthorized", "A at once");
    assert_eq!(get(&service, "/api/projects", &b).await.status().as_u16(), 200, "B still works");
    let list: Vec<Value> = get(&service, "/api/auth/sessions", &b).await.json().await.expect("json");
    assert_eq!(list.len(), 1, "only live ones are listed: {list:?}");

    for id in [uuid::Uuid::new_v4().to_string(), "not-a-uuid".to_string()] {
        let res = with_cookie(&service, reqwest::Method::DELETE, &format!("/api/auth/sessions/{id}"), &b).await;
        assert_eq!(error_code(res, 404).await, "not_found", "{id}");
    }
    // Another user's sign-in is not told apart from one that does not exist.
    add_user(&service, "bob");
    let bob = signed_in(&service, "bob", PASSWORD).await;
    let bobs: Value = get(&service, "/api/auth/me", &bob).await.json().await.expect("json");
    let bobs = bobs["session_id"].as_str().expect("bob's session").to_string();
    let res = with_cookie(&service, reqwest::Method::DELETE, &format!("/api/auth/sessions/{bobs}"), &b).await;
    assert_eq!(error_code(res, 404).await, "not_found");
    assert_eq!(get(&service, "/api/projects", &bob).await.status().as_u16(), 200, "bob is still signed in");
    let bob_list: Vec<Value> = get(&service, "/api/auth/sessions", &bob).await.json().await.expect("json");
    assert_eq!(bob_list.len(), 1, "one's own sign-ins only: {bob_list:?}");
}

#[actix_web::test]
async fn cookies_of_no_live_sign_in_are_refused() {
    let service = with_user(ServiceConfig::new(fake_cli()));
    for cookie in ["conduit_session=".to_string() + &"ab".repeat(32), "conduit_session=garbage".into()] {
        assert_eq!(error_code(get(&service, "/api/projects", &cookie).await, 401).await, "unauthorized", "{cookie}");
    }
    // A user deleted takes their sign-ins along.
    let bob_id = add_user(&service, "bob");
    let bob = signed_in(&service, "bob", PASSWORD).await;
    assert_eq!(get(&service, "/api/projects", &bob).await.status().as_u16(), 200);
    {
        use conduit::db::schema::{login_sessions, users};
        use diesel::prelude::*;
        let mut conn = crate::support::database::connect(&service.dir.path().join("data/conduit.db"));
        diesel::delete(users::table.find(&bob_id)).execute(&mut conn).expect("bob is deleted");
        let left: i64 = login_sessions::table
            .filter(login_sessions::user_id.eq(&bob_id))
            .count()
            .get_result(&mut conn)
            .expect("a count");
        assert_eq!(left, 0, "the sessions went with the user");
    }
    assert_eq!(error_code(get(&service, "/api/projects", &bob).await, 401).await, "unauthorized");
}

#[actix_web::test]
async fn wrong_passwords_on_the_form_are_one_answer_and_lock_the_address_out() {
    let service = with_user(ServiceConfig::new(fake_cli()).env("CONDUIT_LOGIN_LOCKOUT_MS", "3000"));
    assert_eq!(error_code(login(&service, "nobody", PASSWORD).await, 401).await, "bad_login");
    for i in 0..4 {
        let res = login(&service, "ada", &format!("wrong {i}")).await;
        assert!(res.headers().get("set-cookie").is_none());
        assert_eq!(error_code(res, 401).await, "bad_login", "no hint which was wrong");
    }
    let res = login(&service, "ada", PASSWORD).await;
    let retry_after = res.headers().get("retry-after").and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    assert!(retry_after.is_some_and(|s| (1..=3).contains(&s)), "Retry-After: {retry_after:?}");
    assert_eq!(error_code(res, 429).await, "too_many_logins", "the right password waits too");
    // HTTP Basic shares the lockout.
    let basic = service.client.get(service.url("/api/projects")).basic_auth("ada", Some(PASSWORD));
    assert_eq!(error_code(basic.send().await.expect("request"), 429).await, "too_many_logins");
    tokio::time::sleep(Duration::from_millis(3100)).await;
    assert_eq!(login(&service, "ada", PASSWORD).await.status().as_u16(), 200, "after the lockout");
}

#[actix_web::test]
async fn guesses_sent_at_once_get_no_more_checks_than_the_lockout_allows() {
    let service = with_user(ServiceConfig::new(fake_cli()).env("CONDUIT_LOGIN_ATTEMPTS_PER_MINUTE", "100"));
    let guesses = (0..20).map(|i| {
        let service = &service;
        async move { login(service, "ada", &format!("guess {i}")).await.status().as_u16() }
    });
    let answers = futures_util::future::join_all(guesses).await;
    let checked = answers.iter().filter(|s| **s == 401).count();
    assert!(answers.iter().all(|s| [401, 429].contains(s)), "{answers:?}");
    // Checks still running count as failures, so at most the five the lockout allows are made.
    assert!((1..=5).contains(&checked), "{checked} guesses were checked: {answers:?}");
    assert_eq!(error_code(login(&service, "ada", PASSWORD).await, 429).await, "too_many_logins", "locked out");
}

#[actix_web::test]
async fn the_login_form_is_validated() {
    let service = with_user(ServiceConfig::new(fake_cli()));
    let raw = |body: &'static str, content_type: &'static str| {
        service.client.post(service.url("/api/auth/login")).header("content-type", content_type).body(body).send()
    };
    assert_eq!(raw("{\"name\":", "application/json").await.expect("request").status().as_u16(), 400);
    assert_eq!(raw("name=ada", "application/x-www-form-urlencoded").await.expect("request").status().as_u16(), 415);
    let unknown = r#"{"name":"ada","password":"correct horse battery","remember":true}"#;
    assert_eq!(error_code(raw(unknown, "application/json").await.expect("request"), 422).await, "validation_failed");
    let missing = r#"{"name":"ada"}"#;
    assert_eq!(error_code(raw(missing, "application/json").await.expect("request"), 422).await, "validation_failed");
    for (name, password) in [("", PASSWORD), ("ada", ""), (&*"a".repeat(65), PASSWORD)] {
        let res = login(&service, name, password).await;
        assert_eq!(error_code(res, 422).await, "validation_failed", "{name:?} {password:?}");
    }
    assert_eq!(login(&service, "ada", PASSWORD).await.status().as_u16(), 200, "none of it counted as a guess");
}

/// Names no user can have (a NUL byte, which PostgreSQL will not even compare; a space, which
/// `user add` trims) are wrong names like any other: 401, never a storage error.
#[actix_web::test]
async fn a_name_no_user_can_have_is_a_wrong_name() {
    let service = with_user(ServiceConfig::new(fake_cli()));
    for name in ["ada\u{0}", " ada", "ad\u{9d}a"] {
        assert_eq!(error_code(login(&service, name, PASSWORD).await, 401).await, "bad_login", "{name:?}");
    }
    let basic = service.client.get(service.url("/api/projects")).basic_auth("ada\u{0}", Some(PASSWORD));
    assert_eq!(error_code(basic.send().await.expect("request"), 401).await, "unauthorized");
    assert_eq!(login(&service, "ada", PASSWORD).await.status().as_u16(), 200, "four failures are not yet a lockout");
}

#[actix_web::test]
async fn who_am_i_in_open_mode_and_with_a_token() {
    let service = TestService::start(ServiceConfig::new(fake_cli()));
    let me: Value = service.get_json("/api/auth/me").await;
    assert_eq!((me["kind"].as_str(), me["scope"].as_str()), (Some("local"), Some("admin")), "{me}");
    assert!(me.get("user").is_none() && me.get("session_id").is_none(), "{me}");
    let list: Vec<Value> = service.get("/api/auth/sessions").await.json().await.expect("json");
    assert!(list.is_empty(), "nobody's sign-ins: {list:?}");
    assert_eq!(error_code(login(&service, "ada", PASSWORD).await, 401).await, "bad_login", "no users at all");
}

#[actix_web::test]
async fn sign_ins_failures_revocations_and_logouts_are_audited() {
    let service = with_user(ServiceConfig::new(fake_cli()));
    assert_eq!(login(&service, "ada", "wrong").await.status().as_u16(), 401);
    let (a, b) = (signed_in(&service, "ada", PASSWORD).await, signed_in(&service, "ada", PASSWORD).await);
    let me: Value = get(&service, "/api/auth/me", &a).await.json().await.expect("json");
    let (user, a_id) = (me["user"]["id"].as_str().expect("user id"), me["session_id"].as_str().expect("session id"));
    let res = with_cookie(&service, reqwest::Method::DELETE, &format!("/api/auth/sessions/{a_id}"), &b).await;
    assert_eq!(res.status().as_u16(), 204);
    let res = with_cookie(&service, reqwest::Method::POST, "/api/auth/logout", &b).await;
    assert_eq!(res.status().as_u16(), 204);

    let res = service.client.get(service.url("/api/audit")).basic_auth("ada", Some(PASSWORD)).send().await;
    let rows: Vec<Value> = res.expect("the audit").json().await.expect("json");
    // (event, actor, actor_id, target, status)
    type Row<'a> = (&'a str, &'a str, Option<&'a str>, Option<&'a str>, i64);
    let got: Vec<Row> = rows
        .iter()
        .rev()
        .map(|r| {
            let text = |k: &str| r[k].as_str();
            (
                text("event").unwrap_or("?"),
                text("actor").unwrap_or("?"),
                text("actor_id"),
                text("target"),
                r["status"].as_i64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("login_failed", "anonymous", None, None, 401),
            ("login", "user", Some(user), None, 200),
            ("login", "user", Some(user), None, 200),
            ("session_revoked", "user", Some(user), Some(a_id), 204),
            ("logout", "user", Some(user), None, 204),
        ],
        "{rows:#?}"
    );
}

#[actix_web::test]
async fn the_janitor_removes_sign_ins_a_day_after_they_ended() {
    use conduit::db::schema::login_sessions;
    use diesel::prelude::*;
    let service = with_user(ServiceConfig::new(fake_cli()).env("CONDUIT_JANITOR_INTERVAL_MS", "100"));
    let (old, recent, live) = (
        signed_in(&service, "ada", PASSWORD).await,
        signed_in(&service, "ada", PASSWORD).await,
        signed_in(&service, "ada", PASSWORD).await,
    );
    let hash = |cookie: &str| {
        conduit::domain::credentials::token_hash(cookie.strip_prefix("conduit_session=").expect("the cookie"))
    };
    let mut conn = crate::support::database::connect(&service.dir.path().join("data/conduit.db"));
    let row = |cookie: &str| login_sessions::table.filter(login_sessions::secret_hash.eq(hash(cookie)));
    diesel::update(row(&old))
        .set(login_sessions::revoked_at.eq("2020-01-01T00:00:00.000Z"))
        .execute(&mut conn)
        .expect("old");
    let res = with_cookie(&service, reqwest::Method::POST, "/api/auth/logout", &recent).await;
    assert_eq!(res.status().as_u16(), 204, "the recent one is revoked now");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while row(&old).count().get_result::<i64>(&mut conn).expect("count") > 0 {
        assert!(std::time::Instant::now() < deadline, "the old revoked sign-in is removed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for (cookie, what) in [(&recent, "revoked within the day"), (&live, "live")] {
        assert_eq!(row(cookie).count().get_result::<i64>(&mut conn).expect("count"), 1, "{what}: kept");
    }
    assert_eq!(get(&service, "/api/projects", &live).await.status().as_u16(), 200);
}
