//! What a Bash command is read as (the audit's `command_reading`), and hostile commands:
//! no panic, bounded time, and a reading that fails closed.

use std::time::{Duration, Instant};

use serde_json::json;

use super::*;

fn texts(command: &str) -> Vec<String> {
    read_command(command).into_iter().filter(|p| !p.deny_only).map(|p| p.text).collect()
}

#[test]
fn commands_are_read_as_the_words_the_shell_executes() {
    let cases: &[(&str, &[&str])] = &[
        ("rm -rf x; echo hi", &["rm -rf x", "echo hi"]),
        ("FOO=1 sudo -u root /bin/rm  -rf   'a b'", &["rm -rf a b"]),
        ("echo \"$(git rev-parse HEAD)\" > out", &["git rev-parse HEAD", "echo $(git rev-parse HEAD)"]),
        ("{rm,-rf,x}", &["rm -rf x"]),
        ("bash -c 'ls; rm x'", &["ls", "rm x"]),
        // Codex wraps every command so.
        ("/bin/bash -lc 'rm victim.txt'", &["rm victim.txt"]),
        ("find . -name '*.o' -delete", &["find . -name *.o -delete", "rm {}"]),
        ("xargs -I{} rm {}", &["rm {}"]),
        ("cat <<EOF\nrm x\nEOF", &["cat"]),
        ("for f in $(ls); do echo $f; done", &["ls", "echo $f"]),
        ("echo $'a\\tb'", &["echo a\tb"]),
        ("a=1", &[]),
        ("", &[]),
    ];
    for (command, expected) in cases {
        assert_eq!(texts(command), *expected, "{command:?}");
    }
}

#[test]
fn the_reading_names_what_matched_and_what_could_not_be_read() {
    let deny = CompiledRule {
        id: "no-rm".into(),
        project_id: None,
        tool_name: "Bash".into(),
        content: "rm:*".into(),
        pattern: compile_pattern("Bash", "rm:*").expect("valid"),
        behavior: Behavior::Deny,
        priority: 0,
        created_at: String::new(),
        updated_input: None,
    };
    let set = RuleSet::new(vec![deny.clone()]);
    let reading = set.evaluate(None, "Bash", &json!({"command": "echo hi && sudo rm -rf x"})).reading;
    assert_eq!(
        serde_json::to_value(reading).expect("json"),
        json!({"commands": ["echo hi", "rm -rf x"], "matched": "rm -rf x"})
    );
    let sudo = CompiledRule {
        id: "no-sudo".into(),
        content: "sudo:*".into(),
        pattern: compile_pattern("Bash", "sudo:*").expect("valid"),
        ..deny
    };
    let with_sudo = RuleSet::new(vec![sudo]);
    let reading = with_sudo.evaluate(None, "Bash", &json!({"command": "sudo -u root rm x"})).reading;
    assert_eq!(reading.and_then(|r| r.matched).as_deref(), Some("sudo -u root rm x"), "the reading that matched");
    let reading = set.evaluate(None, "Bash", &json!({"command": "ls; $CMD x"})).reading;
    assert_eq!(
        serde_json::to_value(reading).expect("json"),
        json!({"commands": ["ls", "$CMD x"], "not_analyzable": "the program word is taken from a variable ($CMD)"})
    );
    let reading: CommandReading = serde_json::from_str(r#"{"commands": ["ls"]}"#).expect("the stored form reads back");
    assert_eq!(reading, CommandReading { commands: vec!["ls".into()], matched: None, not_analyzable: None });
}

#[test]
fn wrappers_keep_their_own_reading_for_deny_rules() {
    let parts = read_command("sudo -u root rm x");
    assert_eq!(parts[0].text, "rm x");
    assert!(parts[0].alternatives.contains(&"sudo -u root rm x".to_string()), "deny `sudo:*` still sees sudo");
    // An option that is not known: every later word may start the program.
    let parts = read_command("sudo --frobnicate root rm x");
    assert!(parts[0].alternatives.contains(&"rm x".to_string()), "{parts:?}");
    // Known options: the reading is exact, and `git rm` is not `rm`.
    let parts = read_command("timeout --foreground 5 git rm x");
    assert_eq!(parts[0].text, "git rm x");
    assert!(!parts[0].alternatives.iter().any(|a| a.starts_with("rm")), "{parts:?}");
}

/// Reads `command` on a small stack (a session's thread has more), and in bounded time.
fn read_bounded(command: String) -> (Vec<CommandPart>, Duration) {
    std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(move || {
            let started = Instant::now();
            let parts = read_command(&command);
            (parts, started.elapsed())
        })
        .expect("thread")
        .join()
        .expect("no panic")
}

#[test]
fn hostile_commands_fail_closed_without_panic_in_bounded_time() {
    let deep = |open: &str, middle: &str, close: &str, n: usize| open.repeat(n) + middle + &close.repeat(n);
    let mut backticks = "rm x".to_string();
    for _ in 0..6 {
        backticks = format!("echo `{}`", backticks.replace('\\', "\\\\").replace('`', "\\`"));
    }
    let hostile = [
        "$(((((".repeat(10_000),
        deep("$(", "rm x", ")", 5_000),
        deep("(", "rm x", ")", 5_000),
        deep("{ ", "rm x;", " }", 5_000),
        deep("if true; then ", "rm x;", " fi;", 5_000),
        deep("case x in x) ", "rm x;;", " esac;;", 1_000),
        deep("bash -c \"", "rm x", "\"", 40),
        deep("\"$(echo \"", "", "", 5_000),
        deep("eval ", "rm x", "", 200),
        "echo {1..1000000000}".to_string(),
        "echo {a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}{o,p}{q,r}{s,t}".to_string(),
        "echo $'\\u{110000}\\U7fffffff\\777\\c'".to_string(),
        "echo 'ünïcödé' \u{202e}rmx \u{200b}; 日本語 x".to_string(),
        "x".repeat(200_000),
        "echo aaaaaaaaaaaa \"bb $x\" | grep -v c; ".repeat(2_500),
        "rm x; ".repeat(3_000),
        backticks,
        "\u{0}\u{7f}\u{1b}[31m".to_string(),
        "<<<<<<<<>>>>>>>&&&&||||;;;;".to_string(),
        "cat <<".repeat(1_000),
        " ".repeat(2 << 20),
        // One large substitution repeated by brace expansion: the parsing budget stops it.
        format!("echo {{1..256}}\"$({})\"; rm x", "echo aaaaaaaa bbbbbbbbbb; ".repeat(20_000)),
    ];
    for command in hostile {
        let summary: String = command.chars().take(40).collect();
        let (parts, took) = read_bounded(command);
        // A guard against runaway parsing (minutes or forever), not a speed target: the
        // benchmarks hold those. Generous, so a loaded machine cannot fail it.
        let limit = Duration::from_secs(30);
        assert!(took < limit, "{summary:?} took {took:?}");
        let mut set = vec![];
        for p in &parts {
            set.push(p.text.chars().take(60).collect::<String>());
        }
        if summary.starts_with("echo {1..256}") {
            assert!(parts.iter().any(|p| p.not_analyzable.as_deref().is_some_and(|w| w.contains("bytes to parse"))));
        }
        if summary.contains("rm x") {
            let seen = parts.iter().any(|p| p.text.starts_with("rm") || p.not_analyzable.is_some());
            assert!(seen, "{summary:?}: rm is read, or the call fails closed: {set:?}");
        }
    }
}

#[test]
fn other_rules_see_the_same_reading() {
    let rule = |id: &str, tool: &str, content: &str| CompiledRule {
        id: id.into(),
        project_id: None,
        tool_name: tool.into(),
        content: content.into(),
        pattern: compile_pattern(tool, content).expect("valid"),
        behavior: Behavior::Deny,
        priority: 0,
        created_at: String::new(),
        updated_input: None,
    };
    let set = RuleSet::new(vec![
        rule("push", "Bash", "git push:*"),
        rule("etc", "Read", "/etc/**"),
        rule("secret", "Write", "/srv/app/*.env"),
    ]);
    for command in [
        "git push origin main",
        "\"git\" push",
        "g\\it 'push' --force",
        "cd x && git push",
        "{git,push}",
        "sudo -u me git push",
        "bash -c 'git push'",
        "if true; then git push; fi",
        "/usr/bin/git push",
        "timeout 60 git push",
    ] {
        assert_eq!(set.evaluate(None, "Bash", &json!({ "command": command })).behavior, Behavior::Deny, "{command:?}");
    }
    for command in ["git pull", "git status && echo push", "echo git push", "git log --grep push"] {
        assert_eq!(set.evaluate(None, "Bash", &json!({ "command": command })).behavior, Behavior::Allow, "{command:?}");
    }
    let read = |path: &str| set.evaluate(None, "Read", &json!({ "file_path": path }));
    assert_eq!(read("/etc/../etc/shadow").behavior, Behavior::Deny);
    assert!(read("/etc/passwd").reading.is_none(), "no command reading for other tools");
    let write = |path: &str| set.evaluate(None, "Write", &json!({ "file_path": path, "content": "$(rm x)" }));
    assert_eq!(write("/srv/app/prod.env").behavior, Behavior::Deny);
    assert_eq!(write("/srv/app/conf/prod.env").behavior, Behavior::Allow);
}
