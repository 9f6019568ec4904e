//! How far a CLI is fenced in by the operating system, under the permission rules: the rules
//! decide first, the sandbox catches what slips through them.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A project's sandbox (`null` on a project: the service's `sandbox` setting).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SandboxMode {
    /// No sandbox: the CLI can do whatever the service's user can.
    Off,
    /// A file system built from what the session needs: the system folders and the tools on
    /// PATH read-only, its own workspace and the CLI's state writable, everything else absent
    /// (the service's data and keys, other projects, the secret folders). Its own network
    /// namespace: the internet through a user-mode stack, the machine's loopback closed but for
    /// the ports the CLI needs (see `sandbox_network`).
    Workspace,
    /// `workspace`, and TCP connections only to the model API's port (and the session's
    /// bridge port).
    Strict,
}

text_enum!(SandboxMode, "sandbox mode", {
    Off => "off",
    Workspace => "workspace",
    Strict => "strict",
});

impl SandboxMode {
    pub const fn is_on(self) -> bool {
        !matches!(self, SandboxMode::Off)
    }
}

/// The `sandbox_network` setting: the network of a sandboxed process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SandboxNetwork {
    /// A network namespace of its own with outbound connectivity through pasta (Debian's
    /// `passt`): the machine's loopback, where the service listens, is unreachable but for the
    /// ports the process needs (its model API on loopback, its bridge, `sandbox_host_ports`).
    Isolated,
    /// The machine's own network, loopback included: a sandboxed process can reach the
    /// service's port and anything else listening on this machine.
    Host,
}

text_enum!(SandboxNetwork, "sandbox network", {
    Isolated => "isolated",
    Host => "host",
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_forms_agree() {
        crate::domain::check_text_enum(SandboxMode::ALL, &["off", "workspace", "strict"]);
        crate::domain::check_text_enum(SandboxNetwork::ALL, &["isolated", "host"]);
    }
}
