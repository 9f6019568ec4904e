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
    /// The project folder and the CLI's own state are writable, the rest of the file system is
    /// read-only, and the secret folders are hidden. The network is open.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_forms_agree() {
        crate::domain::check_text_enum(SandboxMode::ALL, &["off", "workspace", "strict"]);
    }
}
