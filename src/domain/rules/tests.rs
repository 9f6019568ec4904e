use serde_json::{json, Value};

use super::*;

fn rule(id: &str, project: Option<&str>, tool: &str, content: &str, behavior: Behavior, priority: i32) -> CompiledRule {
    CompiledRule {
        id: id.to_string(),
        project_id: project.map(String::from),
        tool_name: tool.to_string(),
        content: content.to_string(),
        pattern: compile_pattern(tool, content).expect("valid pattern"),
        behavior,
        priority,
        created_at: format!("2026-01-01T00:00:{:02}.000Z", id.len()),
        updated_input: None,
    }
}

fn decide<'a>(set: &'a RuleSet, project: Option<&str>, tool: &str, input: Value) -> (Behavior, Option<&'a str>) {
    let v = set.evaluate(project, tool, &input);
    (v.behavior, v.rule.map(|r| r.id.as_str()))
}

#[test]
fn bypass_attempts_against_a_deny_rm_prefix_are_all_denied() {
    let set = RuleSet::new(vec![rule("no-rm", None, "Bash", "rm:*", Behavior::Deny, 0)]);
    for cmd in [
        "rm -rf x",
        " rm x",
        "\trm x",
        "/bin/rm x",
        "echo a; rm x",
        "true && rm x",
        "ls | rm x",
        "$(rm x)",
        "echo `rm x`",
        "false || rm x",
        "sleep 1 & rm x",
        "echo a\nrm x",
        "FOO=1 rm x",
        "sudo rm x",
        "sudo -u root /usr/bin/rm x",
        "env X=1 rm x",
        "(rm x)",
        "echo \"$(rm x)\"",
        "cat <(rm x)",
        "rm",
    ] {
        assert_eq!(decide(&set, None, "Bash", json!({"command": cmd})).0, Behavior::Deny, "{cmd:?}");
    }
    for cmd in ["ls", "rmdir x", "echo rm x", "git rm x", "echo 'a; rm x'", "grep rm file", "rmx"] {
        assert_eq!(decide(&set, None, "Bash", json!({"command": cmd})).0, Behavior::Allow, "{cmd:?}");
    }
}

#[test]
fn file_paths_are_normalized_before_matching() {
    let set = RuleSet::new(vec![rule("etc", None, "Read", "/etc/**", Behavior::Deny, 0)]);
    for path in ["/etc/passwd", "/etc/../etc/passwd", "//etc/passwd", "/etc/./ssh/key", "/tmp/../etc/shadow"] {
        assert_eq!(decide(&set, None, "Read", json!({"file_path": path})).0, Behavior::Deny, "{path}");
    }
    assert_eq!(decide(&set, None, "Read", json!({"file_path": "/etcetera/x"})).0, Behavior::Allow);
    assert_eq!(decide(&set, None, "Read", json!({"file_path": "/home/etc/x"})).0, Behavior::Allow);
}

#[test]
fn every_tool_subject() {
    let set = RuleSet::new(vec![
        rule("w", None, "Write", "/secret/*", Behavior::Deny, 0),
        rule("e", None, "Edit", "**/*.lock", Behavior::Deny, 0),
        rule("nb", None, "NotebookEdit", "/nb/*.ipynb", Behavior::Deny, 0),
        rule("g", None, "Glob", "/private/**", Behavior::Deny, 0),
        rule("gr", None, "Grep", "password*", Behavior::Deny, 0),
        rule("web", None, "WebFetch", "*evil.example*", Behavior::Deny, 0),
    ]);
    assert_eq!(decide(&set, None, "Write", json!({"file_path": "/secret/a"})).1, Some("w"));
    assert_eq!(decide(&set, None, "Write", json!({"file_path": "/secret/a/b"})).1, None, "* stays in one segment");
    assert_eq!(decide(&set, None, "Edit", json!({"file_path": "/p/Cargo.lock"})).1, Some("e"));
    assert_eq!(decide(&set, None, "NotebookEdit", json!({"notebook_path": "/nb/a.ipynb"})).1, Some("nb"));
    assert_eq!(decide(&set, None, "Glob", json!({"pattern": "*.rs", "path": "/private/x"})).1, Some("g"));
    assert_eq!(decide(&set, None, "Grep", json!({"pattern": "passwords"})).1, Some("gr"));
    assert_eq!(decide(&set, None, "WebFetch", json!({"url": "https://evil.example/x"})).1, Some("web"));
    assert_eq!(decide(&set, None, "WebFetch", json!({"url": "https://good.example/x"})).1, None);
}

#[test]
fn glob_features() {
    let set = RuleSet::new(vec![
        rule("q", None, "Bash", "make ?", Behavior::Deny, 0),
        rule("class", None, "Bash", "deploy [ps]rod*", Behavior::Deny, 0),
        rule("star", None, "Bash", "curl *://internal/*", Behavior::Deny, 0),
    ]);
    assert_eq!(decide(&set, None, "Bash", json!({"command": "make a"})).1, Some("q"));
    assert_eq!(decide(&set, None, "Bash", json!({"command": "make ab"})).1, None);
    assert_eq!(decide(&set, None, "Bash", json!({"command": "deploy prod-eu"})).1, Some("class"));
    assert_eq!(decide(&set, None, "Bash", json!({"command": "deploy trod"})).1, None);
    assert_eq!(
        decide(&set, None, "Bash", json!({"command": "curl http://internal/a/b"})).1,
        Some("star"),
        "* crosses / in commands"
    );
    assert!(compile_pattern("Bash", "[unclosed").is_err());
    assert!(compile_pattern("Read", "a{b").is_err());
}

#[test]
fn prefix_form_respects_the_word_boundary() {
    let set = RuleSet::new(vec![rule("git", None, "Bash", "git:*", Behavior::Deny, 0)]);
    assert_eq!(decide(&set, None, "Bash", json!({"command": "git"})).0, Behavior::Deny);
    assert_eq!(decide(&set, None, "Bash", json!({"command": "git push"})).0, Behavior::Deny);
    assert_eq!(decide(&set, None, "Bash", json!({"command": "git\tpush"})).0, Behavior::Deny);
    assert_eq!(decide(&set, None, "Bash", json!({"command": "gitx push"})).0, Behavior::Allow);
    let two = RuleSet::new(vec![rule("gp", None, "Bash", "git push:*", Behavior::Deny, 0)]);
    assert_eq!(decide(&two, None, "Bash", json!({"command": "git  push origin"})).0, Behavior::Deny);
    assert_eq!(decide(&two, None, "Bash", json!({"command": "git pull"})).0, Behavior::Allow);
}

#[test]
fn order_priorities_project_over_global_deny_over_allow() {
    let p = Some("p1");
    let set = RuleSet::new(vec![
        rule("global-allow-ls", None, "Bash", "ls:*", Behavior::Allow, 100),
        rule("project-allow-ls", p, "Bash", "ls:*", Behavior::Allow, 0),
        rule("global-deny-ls-root", None, "Bash", "ls /root*", Behavior::Deny, 0),
        rule("project-deny-all", p, "*", "", Behavior::Deny, -5),
        rule("project-allow-cat-hi", p, "Bash", "cat:*", Behavior::Allow, 10),
        rule("project-allow-cat-lo", p, "Bash", "cat:*", Behavior::Allow, 1),
    ]);
    // Project deny comes first, whatever the priorities elsewhere.
    assert_eq!(decide(&set, p, "Bash", json!({"command": "ls"})), (Behavior::Deny, Some("project-deny-all")));
    // Another project: global deny beats global allow.
    assert_eq!(
        decide(&set, Some("p2"), "Bash", json!({"command": "ls /root"})),
        (Behavior::Deny, Some("global-deny-ls-root"))
    );
    assert_eq!(
        decide(&set, Some("p2"), "Bash", json!({"command": "ls /tmp"})),
        (Behavior::Allow, Some("global-allow-ls"))
    );
    assert_eq!(decide(&set, None, "Read", json!({"file_path": "/x"})), (Behavior::Allow, None));

    let set = RuleSet::new(vec![
        rule("global-allow-cat", None, "Bash", "cat:*", Behavior::Allow, 50),
        rule("project-allow-cat-lo", p, "Bash", "cat:*", Behavior::Allow, 1),
        rule("project-allow-cat-hi", p, "Bash", "cat:*", Behavior::Allow, 10),
    ]);
    assert_eq!(
        decide(&set, p, "Bash", json!({"command": "cat f"})).1,
        Some("project-allow-cat-hi"),
        "project allow before global, higher priority first"
    );
}

#[test]
fn equal_priority_older_first() {
    let mut older = rule("a", None, "Bash", "", Behavior::Deny, 0);
    older.created_at = "2026-01-01T00:00:00.000Z".into();
    let mut newer = rule("b", None, "Bash", "", Behavior::Deny, 0);
    newer.created_at = "2026-01-02T00:00:00.000Z".into();
    let set = RuleSet::new(vec![newer, older]);
    assert_eq!(decide(&set, None, "Bash", json!({"command": "x"})).1, Some("a"));
}

#[test]
fn allow_rules_need_every_part() {
    let set = RuleSet::new(vec![rule("git", None, "Bash", "git:*", Behavior::Allow, 0)]);
    assert_eq!(decide(&set, None, "Bash", json!({"command": "git status && git diff"})).1, Some("git"));
    assert_eq!(decide(&set, None, "Bash", json!({"command": "git status && curl x"})).1, None, "default, not the rule");
}

#[test]
fn merging_and_redaction() {
    assert_eq!(
        merge_input(&json!({"command": "rm x", "d": 1}), &json!({"command": "echo no"})),
        json!({"command": "echo no", "d": 1})
    );
    let r =
        redact(&json!({"command": "API_KEY=abc curl x", "headers": {"Authorization": "Bearer t"}, "password": "p"}));
    assert_eq!(
        r,
        json!({"command": "API_KEY=[redacted] curl x", "headers": {"Authorization": "[redacted]"}, "password": "[redacted]"})
    );
}
