//! Cluster mode over TLS with a private CA (`cluster_ca`): two nodes serving HTTPS with
//! certificates a CA made by the test (rcgen) signed. Trusting that CA, a request forwarded to
//! the other node's session works and a terminal's WebSocket is carried over `wss://`; without
//! it, the forward is a prompt JSON 503 that names the TLS problem. A `cluster_ca` file that
//! cannot be used stops startup naming it (that one needs no PostgreSQL).

use std::path::{Path, PathBuf};
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::Connector;

use crate::cluster::{nodes_where, wait_cluster, Cluster};
use crate::cluster_terminals::project;
use crate::support::service::TestService;
use crate::terminals::{read_until, type_in, Reap, Socket};
use crate::tls::{run_to_exit, trusting};

/// A private CA, and certificates for 127.0.0.1 it signed, as PEM files in a folder.
struct Pki {
    dir: tempfile::TempDir,
    ca: rcgen::Certificate,
    ca_key: KeyPair,
    ca_params: CertificateParams,
}

impl Pki {
    fn new() -> Pki {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.distinguished_name.push(DnType::CommonName, "Conduit test cluster CA");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_key = KeyPair::generate().expect("CA key");
        let ca = params.self_signed(&ca_key).expect("CA certificate");
        let pki = Pki { dir: tempfile::tempdir().expect("tempdir"), ca, ca_key, ca_params: params };
        std::fs::write(pki.ca_file(), pki.ca.pem()).expect("CA written");
        pki
    }

    fn ca_file(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    fn ca_pem(&self) -> String {
        self.ca.pem()
    }

    /// A certificate for 127.0.0.1 and localhost signed by the CA, and its key: (cert, key).
    fn server(&self, name: &str) -> (PathBuf, PathBuf) {
        let params = CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()]).expect("params");
        let key = KeyPair::generate().expect("key");
        let issuer = Issuer::from_params(&self.ca_params, &self.ca_key);
        let cert = params.signed_by(&key, &issuer).expect("signed by the CA");
        let (cert_file, key_file) =
            (self.dir.path().join(format!("{name}.crt")), self.dir.path().join(format!("{name}.key")));
        std::fs::write(&cert_file, cert.pem()).expect("cert written");
        std::fs::write(&key_file, key.serialize_pem()).expect("key written");
        (cert_file, key_file)
    }
}

/// Node `name` of `cluster` serving HTTPS with a certificate of `pki`, trusting the CA for its
/// peers when `trusts_ca`; the test's client trusts the CA.
fn tls_node(cluster: &Cluster, pki: &Pki, name: &str, trusts_ca: bool) -> TestService {
    let config = cluster.config(name);
    let port = config.env.iter().find(|(k, _)| k == "CONDUIT_PORT").map(|(_, v)| v.clone()).expect("a port");
    let (cert, key) = pki.server(name);
    let mut config = config
        .env("CONDUIT_NODE_ADDRESS", &format!("https://127.0.0.1:{port}"))
        .env("CONDUIT_TLS_CERT", &cert.display().to_string())
        .env("CONDUIT_TLS_KEY", &key.display().to_string());
    if trusts_ca {
        config = config.env("CONDUIT_CLUSTER_CA", &pki.ca_file().display().to_string());
    }
    let mut node = TestService::start(config);
    assert!(node.address.starts_with("https://"), "{}", node.address);
    node.client = trusting(&pki.ca_pem());
    node
}

/// A session launched through (and run by) `node`, once idle; its id.
async fn idle_session(node: &TestService, project: &str) -> String {
    let session = node.launch(project, json!({})).await;
    let id = session["id"].as_str().expect("id").to_string();
    assert_eq!(session["owner_node"], "a", "{session}");
    node.wait_status(&id, "idle", Duration::from_secs(30)).await;
    id
}

/// The terminal's WebSocket through `node`, over wss:// trusting the CA.
async fn connect(node: &TestService, pki: &Pki, id: &str) -> Socket {
    let url = node.url(&format!("/api/terminals/{id}/ws")).replacen("https://", "wss://", 1);
    let trust = conduit::peer_tls::PeerTrust::new(vec![pki.ca.der().clone()]).expect("the CA is a root");
    let connector = Connector::Rustls(trust.websocket().expect("a rustls config"));
    let request = url.into_client_request().expect("request");
    let (socket, _) = tokio_tungstenite::connect_async_tls_with_config(request, None, false, Some(connector))
        .await
        .expect("the WebSocket connects");
    socket
}

#[actix_web::test]
async fn nodes_trusting_the_private_ca_forward_requests_and_terminals_over_tls() {
    let Some(cluster) = Cluster::new() else { return };
    let pki = Pki::new();
    let (a, b) = (tls_node(&cluster, &pki, "a", true), tls_node(&cluster, &pki, "b", true));
    wait_cluster(&a, Duration::from_secs(20), |v| nodes_where(v, "state", "live").len() == 2).await;
    assert!(a.log().contains("cluster_ca"), "startup says what it trusts:\n{}", a.log());
    let project = project(&cluster, &a, "over-tls").await;
    let id = idle_session(&a, &project).await;

    // A message sent to B reaches the session A runs, over https with the private CA.
    let res = b.post(&format!("/api/sessions/{id}/message"), json!({"content": "via b over tls"})).await;
    assert_eq!(res.status().as_u16(), 202, "{}", res.text().await.unwrap_or_default());
    let row = b.wait_for(&id, Duration::from_secs(30), |r| r["num_turns"] == 1 && r["status"] == "idle").await;
    assert_eq!(row["owner_node"], "a", "{row}");
    let messages = a.get_json(&format!("/api/sessions/{id}/messages")).await;
    assert!(messages.to_string().contains("via b over tls"), "{messages}");

    // A terminal started on A (its project's, asked of A), typed into through B over wss://.
    let res = a.post(&format!("/api/projects/{project}/terminals"), json!({})).await;
    assert_eq!(res.status().as_u16(), 201);
    let terminal: Value = res.json().await.expect("json");
    let tid = terminal["id"].as_str().expect("id").to_string();
    let _reap = Reap(tid.clone());
    let row = b.get_json(&format!("/api/terminals/{tid}")).await;
    assert_eq!(row["id"], tid.as_str(), "looked up on A through B: {row}");
    let mut socket = connect(&b, &pki, &tid).await;
    type_in(&mut socket, "echo $((6*7))-over-wss\n").await;
    read_until(&mut socket, "42-over-wss", &mut Vec::new()).await;
    let res = b.delete(&format!("/api/terminals/{tid}")).await;
    assert_eq!(res.status().as_u16(), 204);
}

#[actix_web::test]
async fn without_the_private_ca_a_forward_is_a_prompt_json_error_naming_the_certificate() {
    let Some(cluster) = Cluster::new() else { return };
    let pki = Pki::new();
    let (a, b) = (tls_node(&cluster, &pki, "a", false), tls_node(&cluster, &pki, "b", false));
    wait_cluster(&a, Duration::from_secs(20), |v| nodes_where(v, "state", "live").len() == 2).await;
    let project = project(&cluster, &a, "untrusted").await;
    let id = idle_session(&a, &project).await;

    let path = format!("/api/sessions/{id}/message");
    let sent = b.post(&path, json!({"content": "via b"}));
    let res = tokio::time::timeout(Duration::from_secs(20), sent).await.expect("an answer, not a hang");
    assert_eq!(res.status().as_u16(), 503);
    let body: Value = res.json().await.expect("a JSON error");
    assert_eq!(body["error"]["code"], "owner_unreachable", "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default().to_lowercase();
    assert!(message.contains("certificate"), "the TLS problem is named: {body}");

    // A terminal A runs cannot be looked up through B either: the same prompt JSON 503.
    let res = a.post(&format!("/api/projects/{project}/terminals"), json!({})).await;
    assert_eq!(res.status().as_u16(), 201);
    let terminal: Value = res.json().await.expect("json");
    let tid = terminal["id"].as_str().expect("id").to_string();
    let _reap = Reap(tid.clone());
    let asked = tokio::time::timeout(Duration::from_secs(20), b.get(&format!("/api/terminals/{tid}"))).await;
    let res = asked.expect("an answer, not a hang");
    assert_eq!(res.status().as_u16(), 503);
    let body: Value = res.json().await.expect("a JSON error");
    assert_eq!(body["error"]["code"], "owner_unreachable", "{body}");
    assert_eq!(a.delete(&format!("/api/terminals/{tid}")).await.status().as_u16(), 204);
}

#[test]
fn an_unusable_cluster_ca_stops_startup_naming_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let garbage = dir.path().join("garbage.pem");
    std::fs::write(&garbage, "this is not a certificate\n").expect("write");
    let broken = dir.path().join("broken.pem");
    std::fs::write(&broken, "-----BEGIN CERTIFICATE-----\n%%% not base64 %%%\n-----END CERTIFICATE-----\n")
        .expect("write");
    let not_der = dir.path().join("not-der.pem");
    std::fs::write(&not_der, "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n").expect("write");
    let missing = dir.path().join("missing.pem");
    let shown = |p: &Path| p.display().to_string();
    for (file, problem) in [
        (&garbage, "no certificate"),
        (&broken, "not valid PEM"),
        (&not_der, "cannot be trusted"),
        (&missing, "cannot be read"),
    ] {
        // A cluster's settings, checked without reaching its database: the file stops startup first.
        let env = [
            ("CONDUIT_DATABASE_URL", "postgres://nobody@127.0.0.1:1/unreached".to_string()),
            ("CONDUIT_CLUSTER", "1".to_string()),
            ("CONDUIT_NODE_NAME", "a".to_string()),
            ("CONDUIT_NODE_ADDRESS", "http://127.0.0.1:1".to_string()),
            ("CONDUIT_CLUSTER_SECRET", "a-cluster-secret-for-tests".to_string()),
            ("CONDUIT_CLUSTER_CA", shown(file)),
        ];
        let (status, stderr) = run_to_exit(dir.path(), &env);
        assert!(!status.success(), "{problem}: refused: {stderr}");
        assert!(
            stderr.contains("cluster_ca") && stderr.contains(&shown(file)) && stderr.contains(problem),
            "{problem}: names the setting and {}: {stderr}",
            shown(file)
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}
