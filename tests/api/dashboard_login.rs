//! The dashboard's login page end to end in real headless Chromium (ui/e2e/login.e2e.mjs)
//! against the real binary with a user: the login page first, a wrong password refused, the
//! right one showing the app, an HttpOnly SameSite=Strict cookie, the sign-in sessions page,
//! and signing out for good (the old cookie no longer works).

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::browser;
use crate::support::service::{fake_cli, ServiceConfig, TestService};

const USER: &str = "ada";
const PASSWORD: &str = "correct horse battery";

#[actix_web::test]
async fn login_end_to_end_in_chromium() {
    browser::chromium();
    // With a user, every /api route wants a credential: the dashboard has to sign in.
    let config = ServiceConfig::new(fake_cli()).env("CONDUIT_ADMIN_USER", USER).env("CONDUIT_ADMIN_PASSWORD", PASSWORD);
    let service = TestService::start(config);

    let shots = browser::fresh_screenshot_dir("dashboard-login");
    let started = Instant::now();
    let env = vec![("E2E_USER", USER.to_string()), ("E2E_PASSWORD", PASSWORD.to_string())];
    let stdout = browser::run_script("login.e2e.mjs", &service, &shots, env).await;
    assert!(stdout.contains("e2e: login flow passed"), "the script's last step did not run:\n{stdout}");

    // The browser signed in once and signed out: that one sign-in is revoked, none is live.
    let revoked: Vec<Option<String>> = {
        use conduit::db::schema::login_sessions;
        use diesel::prelude::*;
        let mut conn = crate::support::database::connect(&service.dir.path().join("data/conduit.db"));
        login_sessions::table.select(login_sessions::revoked_at).load(&mut conn).expect("sign-ins")
    };
    assert_eq!(revoked.len(), 1, "one sign-in (the wrong password made none): {revoked:?}");
    assert!(revoked[0].is_some(), "signing out revoked it: {revoked:?}");
    let live = service.client.get(service.url("/api/auth/sessions")).basic_auth(USER, Some(PASSWORD)).send().await;
    let live: Value = live.expect("request").json().await.expect("json");
    assert_eq!(live, serde_json::json!([]), "no live sign-in is left");

    for shot in ["01-login", "02-wrong-password", "03-signed-in", "04-sign-ins", "05-signed-out", "06-revoked-cookie"] {
        assert!(shots.join(format!("{shot}.png")).is_file(), "screenshot {shot}");
    }
    assert!(started.elapsed() < Duration::from_secs(120), "the browser run took {:?}", started.elapsed());
}
