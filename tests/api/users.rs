//! Users: `conduit user add` (password from standard input, stored as argon2id), the first
//! user from the environment, and a user's name and password as an admin credential.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::helpers::{error_code, spawn_app};
use crate::support::service::{fake_cli, ServiceConfig, TestService};

const PASSWORD: &str = "correct horse battery";

/// `conduit user add NAME` on the database whose SQLite file is `db_path`, `password` on stdin.
fn user_add(db_path: &Path, name: &str, password: &str) -> (bool, String) {
    let home = db_path.parent().expect("a folder");
    let mut child = Command::new(env!("CARGO_BIN_EXE_conduit"))
        .args(["user", "add", name])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("CONDUIT_DB_PATH", db_path)
        .env("CONDUIT_DATABASE_URL", crate::support::database::database_url(db_path))
        .env("CONDUIT_PROJECT_ROOT", home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("conduit runs");
    child.stdin.take().expect("stdin").write_all(format!("{password}\n").as_bytes()).expect("the password is given");
    let out = child.wait_with_output().expect("conduit ends");
    (out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

fn stored_hashes(db_path: &Path) -> Vec<(String, String)> {
    use conduit::db::schema::users;
    use diesel::prelude::*;
    let mut conn = crate::support::database::connect(db_path);
    users::table.select((users::name, users::password_hash)).load(&mut conn).expect("users")
}

#[actix_web::test]
async fn user_add_stores_an_argon2id_hash_and_the_user_signs_in() {
    let app = spawn_app().await;
    assert_eq!(app.get("/api/projects").await.status().as_u16(), 200, "open while nobody exists");
    let db_path = app.dir.path().join("data").join("conduit.db");

    let (ok, output) = user_add(&db_path, "ada", PASSWORD);
    assert!(ok, "user add beside the running service: {output}");
    assert!(!output.contains(PASSWORD), "the password is never echoed: {output}");
    let stored = stored_hashes(&db_path);
    assert_eq!(stored.len(), 1);
    let (name, hash) = &stored[0];
    assert_eq!(name, "ada");
    assert!(hash.starts_with("$argon2id$"), "{hash}");
    assert!(!hash.contains(PASSWORD));

    let (ok, output) = user_add(&db_path, "ada", PASSWORD);
    assert!(!ok && output.contains("already exists"), "{output}");
    let (ok, output) = user_add(&db_path, "bob", "short");
    assert!(!ok && output.contains("at least 8"), "{output}");

    // The service closes once it sees a user (within its 2 s memory of "no credential").
    let deadline = Instant::now() + Duration::from_secs(5);
    while app.get("/api/projects").await.status().as_u16() == 200 {
        assert!(Instant::now() < deadline, "still open after a user was added");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(error_code(app.get("/api/projects").await, 401).await, "unauthorized");
    let as_ada = |path: &str| app.client.get(app.url(path)).basic_auth("ada", Some(PASSWORD));
    assert_eq!(as_ada("/api/tokens").send().await.expect("request").status().as_u16(), 200, "users are admins");
    let wrong = app.client.get(app.url("/api/projects")).basic_auth("ada", Some("wrong password"));
    assert_eq!(error_code(wrong.send().await.expect("request"), 401).await, "unauthorized");

    // A token made by a user names them.
    let res = app
        .client
        .post(app.url("/api/tokens"))
        .basic_auth("ada", Some(PASSWORD))
        .json(&json!({"name": "ci", "scope": "read"}))
        .send()
        .await
        .expect("request");
    let made: serde_json::Value = res.json().await.expect("json");
    assert!(made["created_by"].is_string(), "{made}");
}

#[actix_web::test]
async fn the_first_user_comes_from_the_environment() {
    let config =
        ServiceConfig::new(fake_cli()).env("CONDUIT_ADMIN_USER", "root-admin").env("CONDUIT_ADMIN_PASSWORD", PASSWORD);
    let service = TestService::start(config);
    let res = service.get("/api/projects").await;
    assert_eq!(error_code(res, 401).await, "unauthorized", "closed from the start");
    let res = service.client.get(service.url("/api/projects")).basic_auth("root-admin", Some(PASSWORD)).send().await;
    assert_eq!(res.expect("request").status().as_u16(), 200);
    let stored = stored_hashes(&service.dir.path().join("data/conduit.db"));
    assert_eq!(stored.len(), 1);
    assert!(stored[0].1.starts_with("$argon2id$"), "{}", stored[0].1);
}

/// Password guesses are limited by address: 20 wrong ones from one address are refused with
/// 429 and `Retry-After` after the fifth, while another address still signs in, and the right
/// password works again once the (here short) lockout is over.
#[actix_web::test]
async fn wrong_passwords_lock_their_address_out_and_no_other() {
    let config = ServiceConfig::new(fake_cli())
        .env("CONDUIT_ADMIN_USER", "root-admin")
        .env("CONDUIT_ADMIN_PASSWORD", PASSWORD)
        .env("CONDUIT_LOGIN_LOCKOUT_MS", "3000");
    let service = TestService::start(config);
    let from = |address: [u8; 4]| {
        reqwest::Client::builder().local_address(std::net::IpAddr::from(address)).build().expect("a client")
    };
    let (here, there) = (from([127, 0, 0, 1]), from([127, 0, 0, 2]));
    let sign_in = |client: &reqwest::Client, password: &str| {
        client.get(service.url("/api/projects")).basic_auth("root-admin", Some(password)).send()
    };

    let mut answers = Vec::new();
    for i in 0..20 {
        let res = sign_in(&here, &format!("wrong password {i}")).await.expect("request");
        let retry_after = res.headers().get("retry-after").and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        let status = res.status().as_u16();
        let body: serde_json::Value = res.json().await.expect("a JSON error");
        answers.push((status, body["error"]["code"].as_str().unwrap_or_default().to_string(), retry_after));
    }
    assert!(answers[..5].iter().all(|(s, code, _)| *s == 401 && code == "unauthorized"), "{answers:?}");
    for (status, code, retry_after) in &answers[5..] {
        assert_eq!((*status, code.as_str()), (429, "too_many_logins"), "{answers:?}");
        assert!(retry_after.is_some_and(|s| (1..=3).contains(&s)), "Retry-After within the lockout: {answers:?}");
    }

    let res = sign_in(&there, PASSWORD).await.expect("request");
    assert_eq!(res.status().as_u16(), 200, "another address signs in meanwhile");
    let res = sign_in(&here, PASSWORD).await.expect("request");
    assert_eq!(error_code(res, 429).await, "too_many_logins", "the right password waits for the lockout too");

    tokio::time::sleep(Duration::from_millis(3100)).await;
    let res = sign_in(&here, PASSWORD).await.expect("request");
    assert_eq!(res.status().as_u16(), 200, "the right password once the lockout is over");
}

/// A script sending the same HTTP Basic credential on many requests at once (before any of
/// them was checked) is checked once and never refused: the burst is not a burst of guesses.
/// (The same wrong password sent at once is one failure: see the login guard's unit tests,
/// where the order of attempts and outcomes is fixed.)
#[actix_web::test]
async fn a_burst_of_one_credential_is_one_check() {
    let config =
        ServiceConfig::new(fake_cli()).env("CONDUIT_ADMIN_USER", "root-admin").env("CONDUIT_ADMIN_PASSWORD", PASSWORD);
    let service = TestService::start(config);
    let burst = futures_util::future::join_all(
        (0..30)
            .map(|_| service.client.get(service.url("/api/projects")).basic_auth("root-admin", Some(PASSWORD)).send()),
    )
    .await;
    let statuses: Vec<u16> = burst.into_iter().map(|r| r.expect("request").status().as_u16()).collect();
    assert!(statuses.iter().all(|s| *s == 200), "the right password, 30 times at once: {statuses:?}");
}
