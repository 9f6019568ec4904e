//! Typed settings, layered: the compiled-in `config/default.toml`, then an optional TOML file,
//! then environment variables. Every key is validated here, once, so the rest of the service
//! never sees a bad value; a bad one stops startup with a single line naming the key, the
//! variable that set it and what is allowed.

mod agents;
mod cluster;
mod error;
mod layers;
mod load;
mod prices;
mod settings;
mod validate;

pub use agents::{AcpAgent, AgentSettings};
pub use cluster::{valid_node_name, ClusterSettings, FORWARDED_BY, SECRET_HEADER};
pub use error::ConfigError;
pub use load::{env_name, CONFIG_FILE_ENV, DEFAULT_TOML};
pub use settings::{
    is_loopback_host, LogFormat, LoginLimits, ProcessSettings, RequestLimitSettings, SandboxSettings, Settings,
    TerminalSettings, TlsFiles,
};

#[cfg(test)]
mod tests;
