//! The secret rules: what each kind of secret looks like, modelled on gitleaks' rule set
//! (MIT licence, <https://github.com/gitleaks/gitleaks>, `config/gitleaks.toml`; see NOTICE.md),
//! reduced to the kinds a coding agent's transcript meets. Each rule names the keywords that
//! must appear (case-insensitively) for its regex to be run at all: the prefilter.

/// Which part of a match is the secret: the rest (`password=`, `postgres://user:`) stays.
pub(super) struct Rule {
    /// The kind, as the marker shows it: `[REDACTED:github-token]`.
    pub id: &'static str,
    pub keywords: &'static [&'static str],
    pub regex: &'static str,
    /// The capture group holding the secret (0: the whole match).
    pub group: usize,
    /// Shannon entropy (bits per character) the secret must reach: values that are words or
    /// names are not secrets.
    pub min_entropy: f32,
    /// Whether a placeholder (`YOUR_API_KEY`, `${TOKEN}`, `xxxx`) is told apart and kept.
    pub placeholders: bool,
}

const fn exact(id: &'static str, keywords: &'static [&'static str], regex: &'static str) -> Rule {
    Rule { id, keywords, regex, group: 1, min_entropy: 0.0, placeholders: false }
}

/// Ordered from the most specific kind to the most generic: where two rules find the same
/// secret, the earlier one names it.
pub(super) const RULES: &[Rule] = &[
    Rule {
        id: "private-key",
        keywords: &["-----begin"],
        // A whole block; a block cut before its end line loses everything after its header.
        regex: r"(?s)(-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----(?:.*?-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s\\]*))",
        group: 1,
        min_entropy: 0.0,
        placeholders: false,
    },
    exact(
        "aws-access-key",
        &["akia", "asia", "abia", "acca", "a3t"],
        r"\b((?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16})\b",
    ),
    exact("github-token", &["ghp_", "gho_", "ghu_", "ghs_", "ghr_"], r"\b((?:ghp|gho|ghu|ghs|ghr)_[0-9a-zA-Z]{36})\b"),
    exact("github-fine-grained-token", &["github_pat_"], r"\b(github_pat_[0-9a-zA-Z_]{82})\b"),
    exact(
        "gitlab-token",
        &["glpat-", "gldt-", "glptt-", "glrt-"],
        r"\b((?:glpat|gldt|glptt|glrt)-[0-9a-zA-Z_\-]{20})\b",
    ),
    exact(
        "slack-token",
        &["xoxb-", "xoxa-", "xoxp-", "xoxr-", "xoxs-", "xoxe"],
        r"\b(xox(?:[abprs]|e(?:\.xox[bp])?)-[0-9a-zA-Z-]{10,250})",
    ),
    exact(
        "slack-webhook-url",
        &["hooks.slack.com"],
        r"(https?://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{20,100})",
    ),
    exact("npm-token", &["npm_"], r"\b(npm_[a-zA-Z0-9]{36})\b"),
    // Conduit's own API tokens (`domain::credentials::new_token`): a model that reads one from
    // an environment or a script must not pass it on.
    exact("conduit-token", &["cdt_"], r"\b(cdt_[0-9a-f]{64})\b"),
    exact("anthropic-api-key", &["sk-ant-"], r"\b(sk-ant-(?:api03|admin01)-[a-zA-Z0-9_\-]{93}AA)\b"),
    exact(
        "openai-api-key",
        &["t3blbkfj", "sk-proj-", "sk-svcacct-", "sk-admin-"],
        r"\b(sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,300}|[a-zA-Z0-9]{20}T3BlbkFJ[a-zA-Z0-9]{20}))\b",
    ),
    exact("huggingface-token", &["hf_"], r"\b(hf_[a-zA-Z]{34})\b"),
    exact("sendgrid-api-key", &["sg."], r"\b(SG\.[a-zA-Z0-9_\-]{22}\.[a-zA-Z0-9_\-]{43})\b"),
    exact("gcp-api-key", &["aiza"], r"\b(AIza[0-9A-Za-z_\-]{35})\b"),
    exact(
        "stripe-key",
        &["sk_live", "sk_test", "rk_live", "rk_test", "sk_prod", "rk_prod"],
        r"\b((?:sk|rk)_(?:test|live|prod)_[a-zA-Z0-9]{10,99})\b",
    ),
    exact(
        "azure-ad-client-secret",
        &["q~"],
        r"(?:^|[\\'`\s>=:(,)])([a-zA-Z0-9_~.]{3}\dQ~[a-zA-Z0-9_~.-]{31,34})(?:$|[\\'`\s<),])",
    ),
    exact("pypi-token", &["pypi-ageichlwas5vcmc"], r"(pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,})"),
    exact("digitalocean-token", &["dop_v1_", "doo_v1_", "dor_v1_"], r"\b((?:dop|doo|dor)_v1_[a-f0-9]{64})\b"),
    exact(
        "shopify-token",
        &["shpat_", "shpca_", "shppa_", "shpss_"],
        r"\b((?:shpat|shpca|shppa|shpss)_[a-fA-F0-9]{32})\b",
    ),
    Rule {
        id: "jwt",
        keywords: &["eyj"],
        regex: r"\b(ey[a-zA-Z0-9]{17,}\.ey[a-zA-Z0-9/_-]{17,}\.(?:[a-zA-Z0-9/_-]{10,}={0,2})?)",
        group: 1,
        min_entropy: 3.0,
        placeholders: false,
    },
    Rule {
        id: "url-credentials",
        keywords: &["://"],
        // scheme://user:password@host: only the password goes.
        regex: r#"\b[a-zA-Z][a-zA-Z0-9+.-]{1,20}://[^\s:@/?#"'\\<>]{1,100}:([^\s@/?#"'\\<>]{3,200})@[^\s/?#@"'\\<>]{1,255}"#,
        group: 1,
        min_entropy: 0.0,
        placeholders: true,
    },
    Rule {
        id: "bearer-token",
        keywords: &["bearer"],
        regex: r"(?i)\bbearer\s+([A-Za-z0-9._~+/=-]{16,})",
        group: 1,
        min_entropy: 3.0,
        placeholders: true,
    },
    Rule {
        id: "basic-auth",
        keywords: &["basic"],
        regex: r"(?i)\bauthorization\s*[:=]\s*basic\s+([A-Za-z0-9+/=]{8,})",
        group: 1,
        min_entropy: 2.5,
        placeholders: true,
    },
    Rule {
        id: "generic-secret",
        keywords: &["access", "auth", "api", "credential", "creds", "key", "passw", "pwd", "secret", "token"],
        // gitleaks' generic-api-key: a name that says secret, an assignment, a value. Quotes
        // may come escaped (`\"`): a JSON line stored inside another JSON text.
        // ASCII classes: Unicode ones with these counted repeats outgrow the regex size limit.
        regex: r#"(?i)(?:access|auth|api|credential|creds|key|passw(?:or)?d|pwd|secret|token)[ \t0-9A-Za-z_.-]{0,20}[\s'"]{0,3}(?:=|>|:{1,3}=|\|\||:|=>|\?=|,)[`'"\s=\\]{0,5}([0-9A-Za-z_.=+/~-]{10,150})(?:[`'"\s;,)\\]|$)"#,
        group: 1,
        min_entropy: 3.5,
        placeholders: true,
    },
];
