//! The command line: `conduit [serve] | migrate | db reset --yes | redact --all | user add NAME |
//! --version`.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "conduit", version, about = "Orchestration service for coding-agent CLIs")]
pub struct Cli {
    /// A TOML file layered over the compiled-in defaults (also CONDUIT_CONFIG).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Allow listening on a non-loopback address without CONDUIT_AUTH_TOKEN.
    #[arg(long, global = true)]
    pub insecure: bool,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the service (the default when no command is given).
    Serve,
    /// Apply pending database migrations and exit.
    Migrate,
    /// Database maintenance.
    Db {
        #[command(subcommand)]
        action: DbAction,
    },
    /// Rewrite stored rows without the secrets they hold (lines, events, permission decisions,
    /// agent runs, session errors, webhook errors), reporting what changed. Safe while the
    /// service runs; running it again changes nothing.
    Redact {
        /// Every stored row (the only scope there is).
        #[arg(long)]
        all: bool,
    },
    /// Users (every user is an admin for now).
    User {
        #[command(subcommand)]
        action: UserAction,
    },
    /// Inside a `strict` sandbox: limit TCP connections to the given ports, then become
    /// PROGRAM. Started by the service, not by people.
    #[command(hide = true)]
    SandboxExec {
        /// A port TCP connections may go to (repeatable; none: no TCP connections at all).
        #[arg(long = "tcp-port", value_name = "PORT")]
        tcp_ports: Vec<u16>,
        /// The program and its arguments.
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true, value_name = "PROGRAM")]
        command: Vec<String>,
    },
    /// In a sandbox's place: give the sandbox bubblewrap is about to start a network of its
    /// own (pasta on a fresh network namespace), then become bubblewrap. Started by the
    /// service, not by people.
    #[command(hide = true)]
    SandboxNet {
        #[command(flatten)]
        network: NetworkArgs,
        /// Join the network made ahead of time whose holder is this pid, instead.
        #[arg(long)]
        join: Option<i32>,
        /// bubblewrap and its arguments.
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true, value_name = "BWRAP")]
        bwrap: Vec<String>,
    },
    /// Keeps one session's CLI, so it outlives the service (reads its spec on stdin). Started
    /// by the service, not by people.
    #[command(hide = true)]
    Keeper,
    /// A sandbox's network made ahead of time (see `sandbox-net --join`). Started by the
    /// service, not by people.
    #[command(hide = true)]
    SandboxNetWarden {
        #[command(flatten)]
        network: NetworkArgs,
    },
}

/// A sandbox network's pasta and the loopback ports it lets through.
#[derive(Debug, clap::Args)]
pub struct NetworkArgs {
    /// The pasta executable.
    #[arg(long)]
    pub pasta: std::path::PathBuf,
    /// TCP ports of this machine's loopback the sandbox may reach (comma separated).
    #[arg(long, value_delimiter = ',')]
    pub tcp: Vec<u16>,
    /// UDP ports of this machine's loopback the sandbox may reach (comma separated).
    #[arg(long, value_delimiter = ',')]
    pub udp: Vec<u16>,
}

#[derive(Debug, Subcommand)]
pub enum DbAction {
    /// Erase the database and recreate it empty. Asks nothing; refuses without --yes.
    Reset {
        /// Confirm that every project, session and log row may be erased.
        #[arg(long)]
        yes: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum UserAction {
    /// Create a user. The password is read from standard input (its first line), never from
    /// the command line: `printf '%s\n' "$PASSWORD" | conduit user add NAME`.
    Add {
        /// 1 to 64 letters, digits, '.', '_', '-' or '@'.
        name: String,
    },
}
