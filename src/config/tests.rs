use std::collections::BTreeMap;
use std::path::PathBuf;

use super::*;

/// An environment with HOME=/h unless the pairs set it.
fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> = [("HOME".to_string(), "/h".to_string())].into();
    env.extend(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    env
}

#[test]
fn defaults_match_the_documented_values() {
    let s = Settings::load_from(None, &env(&[("HOME", "/home/x")])).expect("defaults are valid");
    assert_eq!(s.port, 3100);
    assert_eq!(s.host, "127.0.0.1");
    assert_eq!(s.db_path, PathBuf::from("./data/conduit.db"));
    assert_eq!(s.cli_path, "claude");
    assert_eq!((s.ws_port_range_start, s.ws_port_range_end), (9000, 9100));
    assert_eq!(s.transport, crate::domain::validate::Transport::Stdio);
    assert_eq!((s.max_agents, s.agent_kill_grace_ms), (10, 15_000));
    let short = Settings::load_from(None, &env(&[("CONDUIT_AGENT_KILL_GRACE_MS", "100")])).expect("valid");
    assert_eq!(short.agent_kill_grace_ms, 5_000, "clamped to 5 s");
    let long = Settings::load_from(None, &env(&[("CONDUIT_AGENT_KILL_GRACE_MS", "600000")])).expect("valid");
    assert_eq!(long.agent_kill_grace_ms, 60_000, "clamped to 60 s");
    assert_eq!(s.max_sessions_global, 20);
    assert_eq!(s.session_idle_timeout_ms, 3_600_000);
    assert_eq!(s.janitor_interval_ms, 60_000);
    assert_eq!(s.project_root, PathBuf::from("/home/x"));
    assert_eq!(s.scan_depth, 2);
    assert_eq!(s.webhook_secret, None);
    assert_eq!(s.auth_token, None);
    assert_eq!(s.log_level, "info");
    assert_eq!(s.log_format, LogFormat::Pretty);
    assert_eq!(s.shell_analysis, crate::domain::rules::ShellAnalysis::Strict);
    let lenient = Settings::load_from(None, &env(&[("CONDUIT_SHELL_ANALYSIS", "lenient")])).expect("valid");
    assert_eq!(lenient.shell_analysis, crate::domain::rules::ShellAnalysis::Lenient);
}

#[test]
fn environment_overrides_defaults() {
    let s = Settings::load_from(
        None,
        &env(&[
            ("CONDUIT_PORT", "4000"),
            ("CONDUIT_SCAN_DEPTH", "5"),
            ("CONDUIT_ALLOWED_HOSTS", "a.lan, B.lan:80"),
            ("CONDUIT_PROJECT_ROOT", "/srv/p"),
            ("LOG_FORMAT", "json"),
            ("CONDUIT_WEBHOOK_SECRET", "s3"),
            ("CONDUIT_JANITOR_INTERVAL_MS", "200"),
            ("CONDUIT_SESSION_IDLE_TIMEOUT_MS", "1500"),
        ]),
    )
    .expect("valid");
    assert_eq!((s.janitor_interval_ms, s.session_idle_timeout_ms), (200, 1500));
    assert_eq!(s.port, 4000);
    assert_eq!(s.scan_depth, 5);
    assert_eq!(s.allowed_hosts, vec!["a.lan", "b.lan:80"]);
    assert_eq!(s.project_root, PathBuf::from("/srv/p"));
    assert_eq!(s.log_format, LogFormat::Json);
    assert_eq!(s.webhook_secret.as_deref(), Some("s3"));
    let s = Settings::load_from(None, &env(&[("HOME", "/h"), ("CONDUIT_PROJECT_ROOT", "~/code")])).expect("valid");
    assert_eq!(s.project_root, PathBuf::from("/h/code"));
}

#[test]
fn bad_values_name_the_key_and_the_allowed_values() {
    let cases = [
        ("CONDUIT_PORT", "99999", "`port`", "0 to 65535"),
        ("CONDUIT_SCAN_DEPTH", "-1", "`scan_depth`", "0 to 10"),
        ("CONDUIT_PORT", "abc", "`port`", "integer"),
        ("LOG_FORMAT", "xml", "`log_format`", "pretty, json"),
        ("LOG_LEVEL", "loud[", "`log_level`", "trace, debug"),
        ("CONDUIT_WS_PORT_RANGE_END", "10", "`ws_port_range_end`", "at least"),
        ("CONDUIT_ALLOWED_ORIGINS", "evil.com", "`allowed_origins`", "http://"),
        ("CONDUIT_TRANSPORT", "tcp", "`transport`", "stdio, websocket, auto"),
        ("CONDUIT_SHELL_ANALYSIS", "loose", "`shell_analysis`", "strict, lenient"),
        ("CONDUIT_REDACTION", "never", "`redaction`", "at_rest, in_flight"),
        ("CONDUIT_JANITOR_INTERVAL_MS", "10", "`janitor_interval_ms`", "50 to 86400000"),
        ("CONDUIT_JANITOR_INTERVAL_MS", "soon", "`janitor_interval_ms`", "integer"),
        ("CONDUIT_SESSION_IDLE_TIMEOUT_MS", "999", "`session_idle_timeout_ms`", "from 1000"),
        ("CONDUIT_MODEL_PRICES", "cheap", "`model_prices`", "inline table"),
        ("CONDUIT_MODEL_PRICES", r#"{ m = { input = -1, output = 1 } }"#, "`model_prices`", "from 0 to 10000"),
        ("CONDUIT_MODEL_PRICES", r#"{ m = { input = 1 } }"#, "`model_prices`", "`output` must be a number"),
        ("CONDUIT_MODEL_PRICES", r#"{ m = { input = 1, output = 1, cached = 0 } }"#, "`model_prices`", "unknown key"),
    ];
    for (var, value, key, allowed) in cases {
        let err = Settings::load_from(None, &env(&[(var, value)])).expect_err(var).to_string();
        assert!(err.contains(key) && err.contains(allowed) && err.contains(var), "{var}={value}: {err}");
        assert!(!err.contains('\n'), "one line: {err}");
    }
}

#[test]
fn model_prices_add_to_and_override_the_built_in_ones() {
    let prices = r#"{ "gpt-5-mini" = { input = 2, output = 8.5 }, "my-model" = { input = 0.5, output = 1 } }"#;
    let s = Settings::load_from(None, &env(&[("CONDUIT_MODEL_PRICES", prices)])).expect("valid");
    let of = |m: &str| s.model_prices.of(Some(m)).map(|p| (p.input, p.output));
    assert_eq!(of("gpt-5-mini"), Some((2.0, 8.5)));
    assert_eq!(of("my-model"), Some((0.5, 1.0)));
    assert_eq!(of("gemini-2.5-pro"), Some((1.25, 10.0)), "the built-in ones stay");
    let defaults = Settings::load_from(None, &env(&[])).expect("defaults");
    assert_eq!(defaults.model_prices, crate::domain::prices::PriceTable::default());
}

#[test]
fn unknown_key_in_a_file_is_rejected() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("c.toml");
    std::fs::write(&path, "port = 5000\nprot = 1\n").expect("write");
    let err = Settings::load_from(Some(&path), &env(&[])).expect_err("unknown key").to_string();
    assert!(err.contains("`prot`") && err.contains("unknown key") && err.contains("port"), "{err}");

    std::fs::write(&path, "port = 5000\n").expect("write");
    let s = Settings::load_from(Some(&path), &env(&[("HOME", "/h")])).expect("valid file");
    assert_eq!(s.port, 5000);
}

#[test]
fn debug_output_hides_secrets() {
    let s = Settings::load_from(None, &env(&[("CONDUIT_AUTH_TOKEN", "hunter2"), ("HOME", "/h")])).expect("valid");
    assert!(!format!("{s:?}").contains("hunter2"));
}

#[test]
fn loopback_detection() {
    for h in ["127.0.0.1", "127.1.2.3", "localhost", "app.localhost", "::1", "[::1]"] {
        assert!(is_loopback_host(h), "{h}");
    }
    for h in ["0.0.0.0", "192.168.1.4", "example.com", "localhost.evil.com"] {
        assert!(!is_loopback_host(h), "{h}");
    }
}

#[test]
fn tls_takes_both_files_or_neither_and_marks_the_cookie_secure() {
    let off = Settings::load_from(None, &env(&[])).expect("defaults");
    assert_eq!((off.tls, off.secure_cookies), (None, false), "plain HTTP by default");

    let both = [("CONDUIT_TLS_CERT", "~/tls/cert.pem"), ("CONDUIT_TLS_KEY", "/etc/conduit/key.pem")];
    let on = Settings::load_from(None, &env(&both)).expect("valid");
    let files = on.tls.expect("TLS is on");
    assert_eq!(files.cert, PathBuf::from("/h/tls/cert.pem"), "~ is HOME");
    assert_eq!(files.key, PathBuf::from("/etc/conduit/key.pem"));
    assert!(on.secure_cookies, "a cookie set over TLS is Secure without secure_cookies");

    for (var, key, other) in
        [("CONDUIT_TLS_CERT", "`tls_cert`", "tls_key"), ("CONDUIT_TLS_KEY", "`tls_key`", "tls_cert")]
    {
        let err = Settings::load_from(None, &env(&[(var, "/x.pem")])).expect_err(var).to_string();
        assert!(err.contains(key) && err.contains(var) && err.contains(other), "{var} alone: {err}");
    }
}

#[test]
fn cluster_ca_is_a_path_of_the_cluster_settings() {
    let cluster = [
        ("CONDUIT_DATABASE_URL", "postgres://u@127.0.0.1:5432/c"),
        ("CONDUIT_CLUSTER", "1"),
        ("CONDUIT_NODE_NAME", "a"),
        ("CONDUIT_NODE_ADDRESS", "https://10.0.0.5:3100"),
        ("CONDUIT_CLUSTER_SECRET", "a-cluster-secret-of-16+"),
    ];
    let plain = Settings::load_from(None, &env(&cluster)).expect("valid");
    assert_eq!(plain.cluster.expect("a cluster").ca, None, "the public roots only by default");

    let with = |value: &str| {
        let mut pairs = cluster.to_vec();
        pairs.push(("CONDUIT_CLUSTER_CA", value));
        Settings::load_from(None, &env(&pairs))
    };
    let ca = with("~/pki/ca.pem").expect("valid").cluster.expect("a cluster").ca;
    assert_eq!(ca, Some(PathBuf::from("/h/pki/ca.pem")), "~ is HOME");
    let ca = with("/etc/conduit/ca.pem").expect("valid").cluster.expect("a cluster").ca;
    assert_eq!(ca, Some(PathBuf::from("/etc/conduit/ca.pem")));

    let err = with("~/ca.pem\0").expect_err("a NUL").to_string();
    assert!(err.contains("`cluster_ca`") && err.contains("CONDUIT_CLUSTER_CA"), "{err}");
    assert!(!err.contains('\n'), "one line: {err}");
}
