//! `conduit sandbox-exec`: the last step inside a `strict` sandbox. It limits the process to TCP
//! connections to the given ports (Landlock, Linux 6.7+; binding and listening stay allowed), then becomes the CLI (`exec`), so the
//! limit holds for the CLI and everything it starts, and costs no process of its own.
//!
//! Landlock filters by port, not by address, and covers TCP only: the limit is "these ports",
//! and UDP (DNS among it) stays open. It fails closed: when the kernel cannot enforce the limit
//! in full, the CLI is not started.

use std::os::unix::process::CommandExt;

use landlock::{AccessNet, NetPort, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus};

/// The exit status when the limit cannot be set (the shell's "cannot execute").
const CANNOT_SANDBOX: u8 = 126;

/// Limits TCP connections to `ports`, then replaces this process with `program`. Returns only
/// on failure, with the status to exit with.
pub fn limit_tcp_and_exec(ports: &[u16], program: &str, args: &[String]) -> u8 {
    if let Err(e) = limit_tcp_connections(ports) {
        eprintln!("conduit sandbox-exec: cannot limit the network, not starting {program:?}: {e}");
        return CANNOT_SANDBOX;
    }
    let err = std::process::Command::new(program).args(args).exec();
    eprintln!("conduit sandbox-exec: cannot start {program:?}: {err}");
    CANNOT_SANDBOX
}

fn limit_tcp_connections(ports: &[u16]) -> Result<(), String> {
    let status = Ruleset::default()
        .handle_access(AccessNet::ConnectTcp)
        .and_then(|r| r.create())
        .and_then(|r| {
            r.add_rules(ports.iter().map(|&p| Ok::<_, landlock::RulesetError>(NetPort::new(p, AccessNet::ConnectTcp))))
        })
        .and_then(|r| r.restrict_self())
        .map_err(|e| e.to_string())?;
    match status.ruleset {
        RulesetStatus::FullyEnforced => Ok(()),
        other => Err(format!("the kernel enforces it only in part ({other:?}); Landlock ABI 4 (Linux 6.7+) is needed")),
    }
}

/// The Landlock ABI this kernel offers (0: none), for health.
pub fn landlock_abi() -> i32 {
    // landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) answers the ABI version.
    // SAFETY: with a null attribute and the version flag the call reads and writes no memory.
    let version = unsafe { libc::syscall(libc::SYS_landlock_create_ruleset, std::ptr::null::<u8>(), 0usize, 1u32) };
    i32::try_from(version).unwrap_or(0).max(0)
}
