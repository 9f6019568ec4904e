//! The login lockout holds across a cluster's nodes: wrong passwords and wrong guesses at
//! `CONDUIT_AUTH_TOKEN` sent to two nodes count together, and the address is then refused on
//! both, the right password and token included, even where a node remembered them; another
//! address still signs in; once the (short) lockout is over the right ones work again.
//! PostgreSQL pass only.

use std::net::IpAddr;
use std::time::Duration;

use crate::cluster::Cluster;
use crate::helpers::error_code;
use crate::support::service::TestService;

const PASSWORD: &str = "correct horse battery";
const CONFIGURED: &str = "a-configured-token-for-tests";
const LOCKOUT_MS: u64 = 8000;

fn from(address: [u8; 4]) -> reqwest::Client {
    reqwest::Client::builder().local_address(IpAddr::from(address)).build().expect("a client")
}

async fn basic(node: &TestService, client: &reqwest::Client, password: &str) -> reqwest::Response {
    let req = client.get(node.url("/api/projects")).basic_auth("ada", Some(password));
    req.send().await.expect("request")
}

async fn bearer(node: &TestService, client: &reqwest::Client, token: &str) -> reqwest::Response {
    client.get(node.url("/api/projects")).bearer_auth(token).send().await.expect("request")
}

fn retry_after(res: &reqwest::Response) -> Option<u64> {
    res.headers().get("retry-after").and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
}

async fn refused(res: reqwest::Response, what: &str) {
    let wait = retry_after(&res);
    assert!(wait.is_some_and(|s| (1..=LOCKOUT_MS / 1000).contains(&s)), "{what}: Retry-After {wait:?}");
    assert_eq!(error_code(res, 429).await, "too_many_logins", "{what}");
}

#[actix_web::test]
async fn a_lockout_made_on_two_nodes_holds_on_both() {
    let Some(cluster) = Cluster::new() else { return };
    let config = |name: &str| {
        cluster
            .config(name)
            .env("CONDUIT_ADMIN_USER", "ada")
            .env("CONDUIT_ADMIN_PASSWORD", PASSWORD)
            .env("CONDUIT_AUTH_TOKEN", CONFIGURED)
            .env("CONDUIT_LOGIN_LOCKOUT_MS", &LOCKOUT_MS.to_string())
    };
    let (a, b) = (TestService::start(config("a")), TestService::start(config("b")));
    let (here, there) = (from([127, 0, 0, 1]), from([127, 0, 0, 2]));

    // b remembers the right password and token from here (checked once, taken for a minute).
    assert_eq!(basic(&b, &here, PASSWORD).await.status().as_u16(), 200);
    assert_eq!(bearer(&b, &here, CONFIGURED).await.status().as_u16(), 200);

    // Five failures from here, spread over both nodes: two and two wrong passwords, one wrong
    // token. No node saw five; together they lock the address out.
    for (node, i) in [(&a, 0), (&b, 1), (&a, 2), (&b, 3)] {
        assert_eq!(error_code(basic(node, &here, &format!("wrong {i}")).await, 401).await, "unauthorized", "{i}");
    }
    assert_eq!(error_code(bearer(&a, &here, "not-the-token").await, 401).await, "unauthorized");

    refused(basic(&a, &here, "wrong 5").await, "a sixth guess on a").await;
    refused(basic(&b, &here, "wrong 6").await, "a sixth guess on b").await;
    refused(basic(&a, &here, PASSWORD).await, "the right password on a").await;
    refused(basic(&b, &here, PASSWORD).await, "the right password b remembers").await;
    refused(bearer(&b, &here, CONFIGURED).await, "the right token b remembers").await;
    refused(bearer(&a, &here, "another-guess").await, "a token guess on a").await;

    // Another address is not affected, on either node.
    assert_eq!(basic(&a, &there, PASSWORD).await.status().as_u16(), 200, "another address on a");
    assert_eq!(basic(&b, &there, PASSWORD).await.status().as_u16(), 200, "another address on b");

    tokio::time::sleep(Duration::from_millis(LOCKOUT_MS + 200)).await;
    assert_eq!(basic(&a, &here, PASSWORD).await.status().as_u16(), 200, "the right password on a after it");
    assert_eq!(basic(&b, &here, PASSWORD).await.status().as_u16(), 200, "and on b");
    assert_eq!(bearer(&a, &here, CONFIGURED).await.status().as_u16(), 200, "the right token after it");
    // The success forgave the failures: one wrong password is one failure again.
    assert_eq!(basic(&a, &here, "wrong 7").await.status().as_u16(), 401, "counting starts over");
    assert_eq!(basic(&b, &here, PASSWORD).await.status().as_u16(), 200);
}
