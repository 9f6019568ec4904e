//! Optional TLS (`tls_cert`, `tls_key`): the real binary with a self-signed certificate for
//! 127.0.0.1 and localhost made by the test (rcgen), reached by a client that trusts exactly
//! that certificate. HTTPS works, plain HTTP on the same port does not, and the sign-in cookie
//! is `Secure`. Bad settings and bad files stop startup with one line naming them.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::service::{command, fake_cli, ServiceConfig, TestService};

const PASSWORD: &str = "correct horse battery";

/// A certificate and its key as PEM files in `dir`, named after `name`.
struct Pem {
    cert: PathBuf,
    key: PathBuf,
    cert_pem: String,
}

fn self_signed(dir: &Path, name: &str) -> Pem {
    let made = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string(), "localhost".to_string()])
        .expect("a self-signed certificate");
    let cert_pem = made.cert.pem();
    let (cert, key) = (dir.join(format!("{name}.crt")), dir.join(format!("{name}.key")));
    std::fs::write(&cert, &cert_pem).expect("cert written");
    std::fs::write(&key, made.signing_key.serialize_pem()).expect("key written");
    Pem { cert, key, cert_pem }
}

/// A client that trusts `cert_pem` and nothing else.
pub(crate) fn trusting(cert_pem: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .use_rustls_tls()
        .tls_built_in_root_certs(false)
        .add_root_certificate(reqwest::Certificate::from_pem(cert_pem.as_bytes()).expect("the certificate"))
        .pool_idle_timeout(Duration::from_secs(2))
        .build()
        .expect("client")
}

fn port_of(address: &str) -> u16 {
    address.rsplit(':').next().and_then(|p| p.parse().ok()).expect("a port in the address")
}

#[actix_web::test]
async fn with_a_certificate_the_service_serves_https_only_and_the_cookie_is_secure() {
    let files = tempfile::tempdir().expect("tempdir");
    let pem = self_signed(files.path(), "server");
    let mut service = TestService::start(
        ServiceConfig::new(fake_cli())
            .env("CONDUIT_TLS_CERT", &pem.cert.display().to_string())
            .env("CONDUIT_TLS_KEY", &pem.key.display().to_string())
            .env("CONDUIT_ADMIN_USER", "ada")
            .env("CONDUIT_ADMIN_PASSWORD", PASSWORD),
    );
    assert!(service.address.starts_with("https://127.0.0.1:"), "the listening line says https: {}", service.address);
    assert!(service.log().contains("https://"), "the log names https:\n{}", service.log());
    let port = port_of(&service.address);

    // A client that does not trust the test's certificate is refused by its own TLS check,
    // so what answers below is this certificate.
    let untrusting = reqwest::Client::builder().use_rustls_tls().build().expect("client");
    assert!(untrusting.get(service.url("/api/health")).send().await.is_err(), "an unknown certificate is refused");
    service.client = trusting(&pem.cert_pem);

    let res = service.post("/api/auth/login", json!({"name": "ada", "password": PASSWORD})).await;
    assert_eq!(res.status().as_u16(), 200, "signed in over https");
    let set = res.headers().get("set-cookie").and_then(|v| v.to_str().ok()).expect("a Set-Cookie").to_string();
    let attributes: Vec<&str> = set.split(';').map(str::trim).collect();
    assert!(attributes.contains(&"Secure"), "the cookie is Secure behind TLS without secure_cookies: {set}");
    assert!(attributes.contains(&"HttpOnly") && attributes.contains(&"SameSite=Strict"), "{set}");
    let cookie = attributes[0].to_string();

    let health = service.client.get(service.url("/api/health")).header("cookie", &cookie).send().await.expect("https");
    assert_eq!(health.status().as_u16(), 200, "GET /api/health over https");
    let body: Value = health.json().await.expect("json");
    assert!(body["status"].is_string(), "{body}");
    let me = service.client.get(service.url("/api/auth/me")).header("cookie", &cookie).send().await.expect("https");
    let me: Value = me.json().await.expect("json");
    assert_eq!(me["user"]["name"], "ada", "the cookie stands for its user over https: {me}");

    // Plain HTTP on the same port is no HTTP server: the TLS handshake fails and nothing answers.
    let plain = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().expect("client");
    let cleartext = plain.get(format!("http://127.0.0.1:{port}/api/health")).header("cookie", &cookie).send().await;
    assert!(cleartext.is_err(), "plain http is not served beside https: {:?}", cleartext.map(|r| r.status()));

    let health = service.client.get(service.url("/api/health")).header("cookie", &cookie).send().await.expect("https");
    assert_eq!(health.status().as_u16(), 200, "https still works after a plain request");
}

/// Runs `conduit serve` with `env` until it exits (it must, within 30 s); its status and stderr.
pub(crate) fn run_to_exit(dir: &Path, env: &[(&str, String)]) -> (std::process::ExitStatus, String) {
    let mut config = ServiceConfig::new(fake_cli());
    for (key, value) in env {
        config = config.env(key, value);
    }
    let mut child = command(dir, &config)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn conduit");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the service started instead of refusing {env:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut stderr).expect("stderr");
    (status, stderr)
}

#[test]
fn a_certificate_without_its_key_stops_startup_naming_both_settings() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pem = self_signed(dir.path(), "server");
    let (status, stderr) = run_to_exit(dir.path(), &[("CONDUIT_TLS_CERT", pem.cert.display().to_string())]);
    assert!(!status.success(), "refused: {stderr}");
    assert!(
        stderr.contains("`tls_cert`") && stderr.contains("CONDUIT_TLS_CERT") && stderr.contains("tls_key"),
        "one clear line: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn unusable_tls_files_stop_startup_naming_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let good = self_signed(dir.path(), "server");
    let other = self_signed(dir.path(), "other");
    let garbage = dir.path().join("garbage.pem");
    std::fs::write(&garbage, "this is not a certificate\n").expect("write");
    let broken = dir.path().join("broken.pem");
    std::fs::write(&broken, "-----BEGIN CERTIFICATE-----\n%%% not base64 %%%\n-----END CERTIFICATE-----\n")
        .expect("write");
    let missing = dir.path().join("missing.pem");
    let shown = |p: &Path| p.display().to_string();
    let cases = [
        (&garbage, &good.key, shown(&garbage), "no certificate"),
        (&broken, &good.key, shown(&broken), "not valid PEM"),
        (&missing, &good.key, shown(&missing), "cannot be read"),
        (&good.cert, &garbage, shown(&garbage), "no private key"),
        (&good.cert, &other.key, shown(&other.key), "does not belong to the certificate"),
    ];
    for (cert, key, named, problem) in cases {
        let env = [("CONDUIT_TLS_CERT", shown(cert)), ("CONDUIT_TLS_KEY", shown(key))];
        let (status, stderr) = run_to_exit(dir.path(), &env);
        assert!(!status.success(), "{problem}: refused: {stderr}");
        assert!(stderr.contains(&named) && stderr.contains(problem), "{problem}: names {named}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}
