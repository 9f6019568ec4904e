//! The CLI's command line for a session. Every value goes in `--flag=value` form, so no value
//! (a prompt may start with "- ") can ever be read as a flag.

pub use crate::domain::launch::CliOptions;

/// Arguments for the stdio stream-json transport. `--include-partial-messages` makes the CLI
/// write the model's text as it arrives (`stream_event` lines), so subscribers see a reply
/// being written rather than only the whole message at its end.
pub fn stdio_args(o: &CliOptions) -> Vec<String> {
    let mut args: Vec<String> = [
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
        "--include-partial-messages",
        "--permission-prompt-tool",
        "stdio",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(option_args(o));
    args
}

/// Arguments for the WebSocket bridge transport: the bridge's URL and the session's flags,
/// without the print/format flags (the CLI implies them with `--sdk-url`, and 2.1.39 refuses
/// some of them next to it).
pub fn websocket_args(o: &CliOptions, url: &str) -> Vec<String> {
    let mut args = vec![format!("--sdk-url={url}")];
    args.extend(option_args(o));
    args
}

/// The session's own flags, shared by every transport.
pub fn option_args(o: &CliOptions) -> Vec<String> {
    let mut args = Vec::new();
    let mut push = |flag: &str, value: &Option<String>| {
        if let Some(v) = value {
            args.push(format!("--{flag}={v}"));
        }
    };
    push("model", &o.model);
    push("permission-mode", &o.permission_mode);
    push("resume", &o.resume_session_id);
    push("system-prompt", &o.system_prompt);
    push("append-system-prompt", &o.append_system_prompt);
    if o.fork_session {
        args.push("--fork-session".to_string());
    }
    if let Some(usd) = o.max_budget_usd {
        args.push(format!("--max-budget-usd={usd}"));
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_always_attached_to_their_flag() {
        let o = CliOptions {
            model: Some("claude-x".into()),
            permission_mode: Some("plan".into()),
            resume_session_id: Some("abc".into()),
            fork_session: true,
            system_prompt: Some("--dangerously-skip-permissions".into()),
            append_system_prompt: Some("- a list\n- more".into()),
            max_budget_usd: Some(0.25),
        };
        let args = stdio_args(&o);
        assert_eq!(
            &args[..9],
            [
                "-p",
                "--input-format",
                "stream-json",
                "--output-format",
                "stream-json",
                "--verbose",
                "--include-partial-messages",
                "--permission-prompt-tool",
                "stdio"
            ]
        );
        assert_eq!(
            &args[9..],
            [
                "--model=claude-x",
                "--permission-mode=plan",
                "--resume=abc",
                "--system-prompt=--dangerously-skip-permissions",
                "--append-system-prompt=- a list\n- more",
                "--fork-session",
                "--max-budget-usd=0.25"
            ]
        );
        assert!(!args.iter().any(|a| a == "--dangerously-skip-permissions"), "a value never stands alone");
    }

    #[test]
    fn the_bridge_transport_passes_its_url_and_no_print_flags() {
        let o = CliOptions { model: Some("m".into()), ..Default::default() };
        let args = websocket_args(&o, "ws://127.0.0.1:9000/abc");
        assert_eq!(args, ["--sdk-url=ws://127.0.0.1:9000/abc", "--model=m"]);
    }

    #[test]
    fn nothing_extra_when_unset() {
        assert_eq!(stdio_args(&CliOptions::default()).len(), 9);
    }
}
