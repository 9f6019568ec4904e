//! The shell reading, spelling by spelling: every way of writing `rm` that a shell runs as
//! `rm` is denied by a deny `Bash rm:*`, and what cannot be read is denied with its reason.

use serde_json::json;

use super::*;

fn rule(id: &str, tool: &str, content: &str, behavior: Behavior) -> CompiledRule {
    CompiledRule {
        id: id.to_string(),
        project_id: None,
        tool_name: tool.to_string(),
        content: content.to_string(),
        pattern: compile_pattern(tool, content).expect("valid pattern"),
        behavior,
        priority: 0,
        created_at: format!("2026-01-01T00:00:{:02}.000Z", id.len()),
        updated_input: None,
    }
}

fn no_rm() -> RuleSet {
    RuleSet::new(vec![rule("no-rm", "Bash", "rm:*", Behavior::Deny)])
}

fn bash<'a>(set: &'a RuleSet, command: &str) -> RuleMatch<'a> {
    set.evaluate(None, "Bash", &json!({ "command": command }))
}

/// Spellings a shell runs as `rm`: each must be read as `rm ...` and denied by the rule itself.
const READ_AS_RM: &[&str] = &[
    // Plain, lists, pipelines, substitutions (the old splitter's cases).
    "rm -rf x",
    " rm x",
    "echo a; rm x",
    "true && rm x",
    "false || rm x",
    "ls | rm x",
    "sleep 1 & rm x",
    "echo a\nrm x",
    "$(rm x)",
    "echo `rm x`",
    "echo \"$(rm x)\"",
    "cat <(rm x)",
    "echo >(rm x)",
    "(rm x)",
    "{ rm x; }",
    "! rm x",
    "rm",
    // Quoting and escapes the shell removes.
    "\"rm\" x",
    "'rm' x",
    "r\"m\" x",
    "r'm' x",
    "\"r\"'m' x",
    "''rm x",
    "rm\"\" x",
    "\\rm x",
    "r\\m x",
    "$'rm' x",
    "$'\\x72m' x",
    "$'\\162m' x",
    "$'\\u0072m' x",
    "$\"rm\" x",
    // Expansions of the program word that are known before it runs.
    "{rm,-rf,x}",
    "{rm,x}",
    "r\\\nm x",
    "rm \\\n -rf x",
    "~/bin/rm x",
    // Unquoted, a directory part could split the word: not analyzable, but what it reads as is
    // denied first.
    "$HOME/bin/rm x",
    "\"$HOME\"/bin/rm x",
    "\"${D}\"/rm x",
    // Paths.
    "/bin/rm x",
    "/usr/bin/rm x",
    "./rm x",
    "../../bin/rm x",
    "/bin/../bin/rm x",
    // Compound commands whose bodies run commands.
    "if true; then rm x; fi",
    "if rm x; then :; fi",
    "if false; then :; else rm x; fi",
    "if false; then :; elif true; then rm x; fi",
    "for f in a b; do rm $f; done",
    "for ((i=0; i<1; i++)); do rm x; done",
    "while true; do rm x; break; done",
    "until false; do rm x; done",
    "case a in a) rm x;; esac",
    "f() { rm x; }",
    "function f { rm x; }",
    "f() ( rm x )",
    "coproc rm x",
    "[[ -n $(rm x) ]]",
    "(( $(rm x) ))",
    "echo $(( 1 + $(rm x) ))",
    "echo ${X:-$(rm x)}",
    "X=$(rm x) true",
    "a[$(rm x)]=1",
    "cat <<EOF\n$(rm x)\nEOF",
    "echo x > $(rm x)",
    // Wrappers and their options.
    "sudo rm x",
    "sudo -u root /usr/bin/rm x",
    "sudo -E -u root rm x",
    "env X=1 rm x",
    "env -i PATH=/bin rm x",
    "env -u HOME rm x",
    "FOO=1 rm x",
    "exec rm x",
    "command rm x",
    "builtin command rm x",
    "nohup rm x",
    "nice rm x",
    "nice -n 5 rm x",
    "nice -5 rm x",
    "time rm x",
    "time -p rm x",
    "timeout 5 rm x",
    "timeout -s KILL 5 rm x",
    "timeout --signal=KILL -k 1 5 rm x",
    "setsid rm x",
    "setsid -f rm x",
    "stdbuf -oL rm x",
    "stdbuf -o L -e 0 rm x",
    "ionice -c 3 rm x",
    "ionice -c3 -n7 rm x",
    "chrt -f 10 rm x",
    "taskset 0x1 rm x",
    "taskset -c 0 rm x",
    "flock /tmp/lock rm x",
    "flock -w 5 /tmp/lock rm x",
    "doas rm x",
    "doas -u root rm x",
    "unbuffer rm x",
    "chroot / rm x",
    "busybox rm x",
    "sudo nice -n 5 timeout 3 rm x",
    "xargs rm",
    "xargs -0 -n 1 rm -f",
    "echo x | xargs -I {} rm {}",
    "find . -name x -exec rm {} \\;",
    "find . -execdir rm -f {} +",
    "find . -ok rm {} \\;",
    "find . -name '*.tmp' -delete",
    // Redirections anywhere.
    ">out rm x",
    "2>/dev/null rm x",
    "< /dev/null rm x",
    "rm x 2>&1 >/dev/null",
    "&>log rm x",
    // Interpreters whose text is read.
    "bash -c 'rm x'",
    "sh -c \"rm x\"",
    "zsh -c 'rm x'",
    "dash -c 'rm x'",
    "ksh -c 'rm x'",
    "bash -lc 'rm x'",
    "bash -o pipefail -c 'ls; rm x'",
    "/bin/bash -c 'rm x'",
    "env bash -c 'rm x'",
    "sudo sh -c 'rm x'",
    "eval rm x",
    "eval 'rm x'",
    "eval \"echo a; rm x\"",
    "bash -c \"bash -c 'rm x'\"",
    "sh -c 'eval \"rm x\"'",
    "bash <<EOF\nrm x\nEOF",
    "bash <<'EOF'\nrm x\nEOF",
    "sh <<< 'rm x'",
    "env -S 'rm x'",
    "flock /tmp/l -c 'rm x'",
    "su -c 'rm x'",
    "watch rm x",
    "echo x | xargs sh -c 'rm x'",
    "bash /dev/stdin <<< 'rm x'",
    ". /dev/stdin <<EOF\nrm x\nEOF",
    "script -c 'rm x' /dev/null",
    // Definitions whose text runs later in the same shell.
    "alias r='rm -rf'\nr x",
    "trap 'rm x' EXIT",
    // Launchers beyond the classic wrappers.
    "strace -f rm x",
    "strace -o log -e trace=file rm x",
    "fakeroot rm x",
    "eatmydata rm x",
    "unshare -r rm x",
    "systemd-run --user --wait rm x",
    "entr -s 'rm x'",
];

#[test]
fn spellings_a_shell_runs_as_rm_are_denied_by_the_rule() {
    let set = no_rm();
    for command in READ_AS_RM {
        let decided = bash(&set, command);
        let reading = decided.reading.as_ref().expect("a reading");
        assert_eq!(decided.behavior, Behavior::Deny, "{command:?} read as {reading:?}");
        assert_eq!(decided.not_analyzable, None, "{command:?} denied by the rule itself: {reading:?}");
        assert!(reading.matched.as_deref().is_some_and(|m| m.starts_with("rm")), "{command:?}: {reading:?}");
    }
    assert!(READ_AS_RM.len() >= 80, "the table covers every class");
}

/// Spellings that hide what runs: denied under `rm:*` in strict mode, with the reason.
const NOT_ANALYZABLE: &[(&str, &str)] = &[
    ("$CMD x", "the program word is taken from a variable ($CMD)"),
    ("${CMD} x", "the program word is taken from a variable (${CMD})"),
    ("r$IFS x", "the program word is taken from a variable ($IFS)"),
    ("rm${IFS}-f${IFS}FILE", "the program word is taken from a variable (${IFS})"),
    // An unquoted directory part is split into words too: the program is its first.
    ("$HOME/bin/ls x", "the program word holds an unquoted variable ($HOME), which the shell splits into words"),
    ("X='curl evil #'; $X/bin/ls", "the program word holds an unquoted variable ($X)"),
    ("$(pwd)/ls x", "the program word holds an unquoted command substitution ($(pwd))"),
    ("$(echo rm) x", "the program word is taken from a command substitution ($(echo rm))"),
    ("`echo rm` x", "the program word is taken from a command substitution (`echo rm`)"),
    ("/bin/r? x", "the program word is a glob pattern (/bin/r?)"),
    ("/bin/r* x", "the program word is a glob pattern (/bin/r*)"),
    ("[r]m x", "the program word is a glob pattern ([r]m)"),
    ("python3 -c 'import os; os.remove(\"x\")'", "python3 -c runs inline code"),
    ("python -c 'x'", "python -c runs inline code"),
    ("node -e 'x'", "node -e runs inline code"),
    ("node --eval 'x'", "node --eval runs inline code"),
    ("node -p 'x'", "node -p runs inline code"),
    ("perl -e 'unlink \"x\"'", "perl -e runs inline code"),
    ("perl -ne 'print'", "perl -e runs inline code"),
    ("perl -E 'say 1'", "perl -E runs inline code"),
    ("ruby -e 'x'", "ruby -e runs inline code"),
    ("php -r 'x;'", "php -r runs inline code"),
    ("python3 <<EOF\nimport os\nEOF", "python3 reads its program from a here-document"),
    ("echo 'print(1)' | python3", "python3 reads its program from a pipe"),
    ("echo 'rm x' | sh", "sh reads its commands from a pipe"),
    ("cat script | bash", "bash reads its commands from a pipe"),
    ("cat <<EOF | bash\nrm x\nEOF", "bash reads its commands from a pipe"),
    ("bash <(echo rm x)", "bash runs a script from a process substitution"),
    ("source <(echo rm x)", "source runs a script from a process substitution"),
    ("bash -c \"$X\"", "the command string bash -c runs is built at run time (a variable $X)"),
    ("eval \"$X\"", "the command string eval runs is built at run time (a variable $X)"),
    ("echo rm x | xargs -I{} sh -c {}", "the command string sh -c runs is built at run time"),
    ("echo rm | xargs -I{} {} x", "xargs puts its input in the program word ({})"),
    ("echo rm x | xargs env", "xargs supplies the program word from its input"),
    ("find . -exec {} \\;", "find puts file names in the program word"),
    ("fish -c 'rm x'", "fish runs commands in another shell's language"),
    ("exec 3<<<'rm x'; bash <&3", "bash reads its commands from another file descriptor"),
    ("echo 'rm x' | . /dev/stdin", ". reads its commands from a pipe"),
    ("parallel rm ::: x", "GNU parallel runs commands built from its input"),
    ("bash < <(echo rm x)", "bash reads its commands from a process substitution"),
    ("hash -p /bin/rm r; r x", "hash binds a command name to a program"),
    ("alias r=$X", "an alias defined at run time"),
    ("echo 'rm x' | sh -s", "sh reads its commands from a pipe"),
    ("echo x; if", "the shell grammar cannot parse it"),
    // brush's grammar has no `select`: it fails closed.
    ("select f in a; do rm x; done", "the shell grammar cannot parse it"),
    ("echo 'unterminated", "the shell grammar cannot parse it"),
];

#[test]
fn what_cannot_be_read_is_denied_with_its_reason_in_strict_mode() {
    let set = no_rm();
    for (command, why) in NOT_ANALYZABLE {
        let decided = bash(&set, command);
        assert_eq!(decided.behavior, Behavior::Deny, "{command:?}: {:?}", decided.reading);
        let reason = decided.not_analyzable.clone().unwrap_or_default();
        assert!(reason.contains(why), "{command:?}: {reason:?} should say {why:?}");
        assert_eq!(decided.rule.map(|r| r.id.as_str()), Some("no-rm"), "the rule in scope is named");
        let reading = decided.reading.expect("a reading");
        assert_eq!(reading.not_analyzable.as_deref(), Some(reason.as_str()));
    }
}

#[test]
fn lenient_mode_matches_what_cannot_be_read_as_plain_text() {
    let set = no_rm().with_shell_analysis(ShellAnalysis::Lenient);
    for (command, _) in NOT_ANALYZABLE {
        let decided = bash(&set, command);
        assert_eq!(decided.not_analyzable, None, "{command:?}");
        // Only what reads as `rm ...` as text is denied.
        let as_text = decided.reading.expect("reading").commands.iter().any(|c| c == "rm" || c.starts_with("rm "));
        let expected = if as_text { Behavior::Deny } else { Behavior::Allow };
        assert_eq!(decided.behavior, expected, "{command:?}");
    }
    assert_eq!(bash(&set, "$CMD x").behavior, Behavior::Allow);
    assert_eq!(bash(&set, "rm x; if").behavior, Behavior::Deny, "a parse error is the whole text: `rm x; if`");
    assert_eq!(bash(&set, "bash -c 'rm x'").behavior, Behavior::Deny, "what can be read still is");
}

#[test]
fn strict_mode_needs_a_deny_rule_in_scope() {
    let only_reads = RuleSet::new(vec![rule("no-etc", "Read", "/etc/**", Behavior::Deny)]);
    for (command, _) in NOT_ANALYZABLE {
        let decided = bash(&only_reads, command);
        assert_eq!((decided.behavior, decided.not_analyzable), (Behavior::Allow, None), "{command:?}");
    }
    let mut project_deny = rule("p-no-rm", "Bash", "rm:*", Behavior::Deny);
    project_deny.project_id = Some("p1".into());
    let set = RuleSet::new(vec![project_deny, rule("star", "*", "*forbidden*", Behavior::Deny)]);
    let decided = set.evaluate(Some("p1"), "Bash", &json!({"command": "$CMD x"}));
    assert_eq!(decided.rule.map(|r| r.id.as_str()), Some("p-no-rm"), "the project's rule comes first");
    let decided = set.evaluate(Some("p2"), "Bash", &json!({"command": "$CMD x"}));
    assert_eq!(decided.rule.map(|r| r.id.as_str()), Some("star"), "a global `*` deny applies to Bash too");
}

#[test]
fn an_explicit_allow_rule_lets_a_part_that_cannot_be_read() {
    let set = RuleSet::new(vec![
        rule("no-rm", "Bash", "rm:*", Behavior::Deny),
        rule("py", "Bash", "python3 -c:*", Behavior::Allow),
        rule("any", "Bash", "", Behavior::Allow),
        rule("ls", "Bash", "ls:*", Behavior::Allow),
    ]);
    let decided = bash(&set, "python3 -c 'print(1)'");
    assert_eq!((decided.behavior, decided.rule.map(|r| r.id.as_str())), (Behavior::Allow, Some("py")));
    let decided = bash(&set, "ls && python3 -c 'print(1)'");
    assert_eq!(decided.behavior, Behavior::Allow, "`py` allows the part it names");
    let decided = bash(&set, "node -e 'x'");
    assert_eq!(decided.behavior, Behavior::Deny, "an allow rule with empty content is not explicit");
    assert!(decided.not_analyzable.is_some_and(|w| w.contains("node -e")));
    let decided = bash(&set, "python3 -c 'x'; rm y");
    assert_eq!((decided.behavior, decided.not_analyzable), (Behavior::Deny, None), "deny rules still win");
}

#[test]
fn allow_rules_still_allow_what_every_part_matches() {
    let set = RuleSet::new(vec![
        rule("no-rm", "Bash", "rm:*", Behavior::Deny),
        rule("git", "Bash", "git:*", Behavior::Allow),
        rule("ls", "Bash", "ls:*", Behavior::Allow),
        rule("grep", "Bash", "grep:*", Behavior::Allow),
        rule("cargo", "Bash", "cargo:*", Behavior::Allow),
    ]);
    // One allow rule must match every part for that rule to decide; otherwise the default
    // (allow) does: either way these stay allowed under a deny `rm:*` in strict mode.
    for command in [
        "ls -la | grep x",
        "ls -la | grep x | grep -v y",
        "git diff | grep x && ls",
        "git commit -m \"$(cat <<'EOF'\nfix: rm old files\nEOF\n)\"",
    ] {
        let decided = bash(&set, command);
        assert_eq!((decided.behavior, decided.not_analyzable), (Behavior::Allow, None), "{command:?}");
    }
    for (command, by) in [
        ("git status && git diff", "git"),
        ("grep -r x . | grep -v y", "grep"),
        ("bash -c 'git status; git log'", "git"),
        ("sudo git status", "git"),
        ("if git diff --quiet; then git status; fi", "git"),
        ("for f in a b; do grep x \"$f\"; done", "grep"),
        ("cargo build --release 2>&1 >/dev/null", "cargo"),
        ("GIT_PAGER=cat git log", "git"),
    ] {
        let decided = bash(&set, command);
        assert_eq!(
            (decided.behavior, decided.rule.map(|r| r.id.as_str())),
            (Behavior::Allow, Some(by)),
            "{command:?}: {:?}",
            decided.reading
        );
    }
    assert_eq!(bash(&set, "git status && curl x").rule.map(|r| r.id.as_str()), None, "curl is not allowed");
    assert_eq!(bash(&set, "cat <<EOF | git apply\nx\nEOF").rule.map(|r| r.id.as_str()), None, "cat is not allowed");
}

#[test]
fn commands_that_only_mention_rm_are_not_denied() {
    let set = no_rm();
    for command in [
        "echo rm",
        "echo rm x",
        "git rm x",
        "rmdir x",
        "rmx",
        "grep rm f",
        "echo 'a; rm x'",
        "echo \"rm x\"",
        "cat <<EOF\nrm x\nEOF",
        "cat <<'EOF'\n$(rm x)\nEOF",
        "printf '%s' \"rm x\"",
        "echo '$(rm x)'",
        "echo \\$\\(rm x\\)",
        "echo '`rm x`'",
        "ls # ; rm x",
        "git commit -m 'rm the old files'",
        "python3 script.py rm",
        "echo '{}' | python3 -m json.tool",
        "man rm",
        "which rm",
        "\"\" rm x",
        "(( 1 + 2 ))",
        "((rm x))",
        "bash script.sh",
        "ls > rm",
    ] {
        let decided = bash(&set, command);
        assert_eq!(decided.behavior, Behavior::Allow, "{command:?} read as {:?}", decided.reading);
    }
}

/// A piece of a program word: text, or an expansion (quoted or not).
#[derive(Debug, Clone)]
enum Piece {
    Text(&'static str),
    Expansion { source: &'static str, quoted: bool },
}

fn piece() -> impl proptest::strategy::Strategy<Value = Piece> {
    use proptest::prelude::*;
    let texts = prop::sample::select(vec!["rm", "r", "m", "/bin/", "./", "/", "x", "-f", "b/", "rm/", "_"]);
    let sources = prop::sample::select(vec![
        "$IFS",
        "${IFS}",
        "${IFS:0:1}",
        "$x",
        "${x}",
        "${x:-rm}",
        "${x:+/bin/rm}",
        "$(echo rm)",
        "`echo r`",
        "$((1))",
        "$1",
        "$@",
        "${x%% *}",
    ]);
    prop_oneof![
        texts.prop_map(Piece::Text),
        (sources, any::<bool>()).prop_map(|(source, quoted)| Piece::Expansion { source, quoted })
    ]
}

/// Whether an expansion in the word can change which program runs: an unquoted one anywhere
/// (the shell splits it into words), or any one after the last `/` (it is part of the name).
fn expansion_can_change_the_program(pieces: &[Piece]) -> bool {
    let last_slash = pieces.iter().rposition(|p| matches!(p, Piece::Text(t) if t.contains('/')));
    pieces.iter().enumerate().any(|(i, p)| match p {
        Piece::Expansion { quoted: false, .. } => true,
        Piece::Expansion { quoted: true, .. } => last_slash.is_none_or(|slash| i > slash),
        Piece::Text(_) => false,
    })
}

fn spelled(pieces: &[Piece]) -> String {
    pieces
        .iter()
        .map(|p| match p {
            Piece::Text(t) => t.to_string(),
            Piece::Expansion { source, quoted: true } => format!("\"{source}\""),
            Piece::Expansion { source, quoted: false } => source.to_string(),
        })
        .collect()
}

proptest::proptest! {
    // A fixed seed: the same 2,000 words every run (a failure names its word; no files kept).
    #![proptest_config(proptest::test_runner::Config {
        cases: 2000,
        failure_persistence: None,
        rng_seed: proptest::test_runner::RngSeed::Fixed(45),
        ..Default::default()
    })]

    /// No program word an expansion can change is read as plain text: under a deny rule in
    /// strict mode, such a call is denied as one that cannot be analyzed.
    #[test]
    fn a_program_word_an_expansion_can_change_is_never_read_as_plain_text(
        pieces in proptest::collection::vec(piece(), 1..6),
    ) {
        proptest::prop_assume!(expansion_can_change_the_program(&pieces));
        let command = format!("{} -f FILE", spelled(&pieces));
        let set = no_rm();
        let decided = bash(&set, &command);
        // Denied: as what it reads as (`$IFS/bin/rm` reads as `rm`) or as what cannot be read.
        proptest::prop_assert_eq!(decided.behavior, Behavior::Deny, "{:?} read as {:?}", command, decided.reading);
        let parts = read_command(&command);
        proptest::prop_assert!(parts.iter().any(|p| p.not_analyzable.is_some()), "{:?}: {:?}", command, parts);
    }
}
