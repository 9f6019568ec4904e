//! A bearer that could only be the configured `CONDUIT_AUTH_TOKEN` (a secret a person chose,
//! like a password) is a guess the login guard counts with the address's password attempts:
//! five wrong ones lock the address out, the right token included; stored API tokens and
//! bearers shaped like them are never counted; with no configured token nothing is.

use std::time::Duration;

use serde_json::{json, Value};

use crate::helpers::error_code;
use crate::support::service::{fake_cli, ServiceConfig, TestService};

const CONFIGURED: &str = "hunter2-but-longer";
const PASSWORD: &str = "correct horse battery";

async fn get(service: &TestService, bearer: &str) -> reqwest::Response {
    service.client.get(service.url("/api/projects")).bearer_auth(bearer).send().await.expect("request")
}

fn retry_after(res: &reqwest::Response) -> Option<u64> {
    res.headers().get("retry-after").and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
}

#[actix_web::test]
async fn wrong_bearers_lock_the_address_out_but_not_its_api_tokens() {
    let config =
        ServiceConfig::new(fake_cli()).env("CONDUIT_AUTH_TOKEN", CONFIGURED).env("CONDUIT_LOGIN_LOCKOUT_MS", "2000");
    let service = TestService::start(config);

    // The right token, many at once: remembered after the first, never held back.
    let burst = futures_util::future::join_all((0..20).map(|_| get(&service, CONFIGURED))).await;
    assert!(
        burst.iter().all(|r| r.status().as_u16() == 200),
        "{:?}",
        burst.iter().map(|r| r.status()).collect::<Vec<_>>()
    );
    let res = service
        .client
        .post(service.url("/api/tokens"))
        .bearer_auth(CONFIGURED)
        .json(&json!({"name": "ci", "scope": "read"}))
        .send()
        .await
        .expect("request");
    assert_eq!(res.status().as_u16(), 201, "a token is made");
    let made: Value = res.json().await.expect("json");
    let api_token = made["token"].as_str().expect("the secret").to_string();

    // Bearers shaped like stored tokens are not guesses: no number of unknown ones locks out.
    for i in 0..8 {
        let unknown = format!("cdt_{:064x}", i);
        assert_eq!(error_code(get(&service, &unknown).await, 401).await, "unauthorized", "{unknown}");
    }
    assert_eq!(get(&service, CONFIGURED).await.status().as_u16(), 200, "not locked out by token-shaped bearers");

    for i in 0..5 {
        let res = get(&service, &format!("hunter{i}")).await;
        assert_eq!(error_code(res, 401).await, "unauthorized", "guess {i}");
    }
    let res = get(&service, CONFIGURED).await;
    assert!(retry_after(&res).is_some_and(|s| (1..=2).contains(&s)), "Retry-After: {:?}", retry_after(&res));
    assert_eq!(error_code(res, 429).await, "too_many_logins", "the right token waits too");
    let res = service.client.get(service.url("/api/projects?token=hunter9")).send().await.expect("request");
    assert_eq!(res.status().as_u16(), 401, "?token= is no bearer off the stream paths");
    let stream = service.client.get(service.url("/api/events/stream?token=hunter9")).send().await.expect("request");
    assert_eq!(error_code(stream, 429).await, "too_many_logins", "?token= on a stream path is a guess too");
    assert_eq!(get(&service, &api_token).await.status().as_u16(), 200, "an API token works during the lockout");

    tokio::time::sleep(Duration::from_millis(2100)).await;
    assert_eq!(get(&service, CONFIGURED).await.status().as_u16(), 200, "the right token after the lockout");
}

#[actix_web::test]
async fn with_no_configured_token_a_wrong_bearer_is_no_guess() {
    let open = TestService::start(ServiceConfig::new(fake_cli()));
    assert_eq!(get(&open, "whatever").await.status().as_u16(), 200, "open mode stays open");

    let config = ServiceConfig::new(fake_cli())
        .env("CONDUIT_ADMIN_USER", "ada")
        .env("CONDUIT_ADMIN_PASSWORD", PASSWORD)
        .env("CONDUIT_LOGIN_LOCKOUT_MS", "60000");
    let service = TestService::start(config);
    for i in 0..10 {
        assert_eq!(error_code(get(&service, &format!("guess {i}")).await, 401).await, "unauthorized", "{i}");
    }
    let basic = service.client.get(service.url("/api/projects")).basic_auth("ada", Some(PASSWORD));
    assert_eq!(basic.send().await.expect("request").status().as_u16(), 200, "nothing was counted");
}
