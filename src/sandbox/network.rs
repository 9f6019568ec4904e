//! A sandbox's own network: a network namespace of its own, joined to the outside by pasta
//! (Debian's `passt`), a user-mode network stack that carries its connections out through
//! ordinary sockets of this machine. Inside, `127.0.0.1` is the sandbox's own loopback: the
//! service's port and every other local service are unreachable, but for the ports the process
//! needs, which pasta forwards to this machine's loopback (`-T`/`-U`): its model API or proxy
//! when a URL in its environment names one on loopback, its WebSocket bridge, the DNS resolver
//! when that is on loopback, and `sandbox_host_ports`. pasta's mapping of the gateway address to
//! this machine's loopback is off (`--no-map-gw`), and nothing from outside is forwarded in
//! (`-t none -u none`).
//!
//! `conduit sandbox-net` runs it: started in the sandbox's place, it joins a network and becomes
//! bubblewrap (`exec`, so the process the service started, its pid and its process group, is
//! bubblewrap's as without a network of its own). The network is one made ahead of time by a
//! warden (`--join <holder>`, see the warden module), or one made on the spot: a forked helper
//! makes the namespace in a holder process, attaches pasta, waits until pasta says it is ready
//! (its pid file), and tells the launcher, which joins it. The helper then stays, pasta's
//! parent, until bubblewrap ends (`PR_SET_PDEATHSIG`), and ends pasta and the holder with it;
//! all carry the sandbox's marker and sit in its cgroup and process group, so they end with it
//! in every other case too. It fails closed: when the network cannot be set up, bubblewrap
//! never starts.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// How long pasta may take to be ready.
const READY_WITHIN: std::time::Duration = std::time::Duration::from_secs(10);

/// The exit status when the network cannot be set up (the shell's "cannot execute").
const CANNOT_SANDBOX: u8 = 126;

/// What a sandbox's network lets through to this machine's loopback.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkPlan {
    pasta: PathBuf,
    tcp: BTreeSet<u16>,
    udp: BTreeSet<u16>,
    /// What runs `conduit sandbox-net`: the service's own executable.
    launcher: PathBuf,
}

impl NetworkPlan {
    /// A network with nothing open to this machine's loopback but DNS when the resolver is
    /// there (`dns_on_loopback`), set up by `launcher` (`conduit sandbox-net`).
    pub fn new(pasta: PathBuf, dns_on_loopback: bool, launcher: PathBuf) -> NetworkPlan {
        let dns: BTreeSet<u16> = if dns_on_loopback { [53].into() } else { BTreeSet::new() };
        NetworkPlan { pasta, tcp: dns.clone(), udp: dns, launcher }
    }

    pub fn pasta(&self) -> &Path {
        &self.pasta
    }

    /// Lets TCP connections to these loopback ports of this machine through.
    pub fn open_host_ports(&mut self, ports: impl IntoIterator<Item = u16>) {
        self.tcp.extend(ports);
    }

    /// Never lets `port` through (the service's own).
    pub fn close_host_port(&mut self, port: u16) {
        self.tcp.remove(&port);
        self.udp.remove(&port);
    }

    /// The loopback TCP ports let through, for `bridge_port` too.
    pub fn host_tcp_ports(&self, bridge_port: Option<u16>) -> Vec<u16> {
        self.tcp.iter().copied().chain(bridge_port).collect::<BTreeSet<u16>>().into_iter().collect()
    }

    /// The loopback ports let through, as a pool of networks made ahead of time keys them.
    pub fn ports(&self, bridge_port: Option<u16>) -> Ports {
        Ports { tcp: self.host_tcp_ports(bridge_port), udp: self.udp.iter().copied().collect() }
    }

    /// The command line that runs bubblewrap (`bwrap args`) with a network of its own: made
    /// now, or `joining` the one made ahead of time whose holder is that pid.
    pub fn wrap(
        &self,
        bwrap: &str,
        args: Vec<String>,
        bridge_port: Option<u16>,
        joining: Option<i32>,
    ) -> (String, Vec<String>) {
        let mut a = vec!["sandbox-net".to_string(), "--pasta".to_string(), self.pasta.to_string_lossy().into_owned()];
        match joining {
            Some(holder) => a.extend(["--join".to_string(), holder.to_string()]),
            None => a.extend(self.ports(bridge_port).arguments()),
        }
        a.extend(["--".to_string(), bwrap.to_string()]);
        a.extend(args);
        (self.launcher.to_string_lossy().into_owned(), a)
    }
}

/// The loopback ports a network lets through to this machine.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Ports {
    pub tcp: Vec<u16>,
    pub udp: Vec<u16>,
}

impl Ports {
    /// `--tcp 53,8080 --udp 53`, as `conduit sandbox-net` and the warden take them.
    pub fn arguments(&self) -> Vec<String> {
        let list = |ports: &[u16]| ports.iter().map(u16::to_string).collect::<Vec<_>>().join(",");
        let mut a = Vec::new();
        if !self.tcp.is_empty() {
            a.extend(["--tcp".to_string(), list(&self.tcp)]);
        }
        if !self.udp.is_empty() {
            a.extend(["--udp".to_string(), list(&self.udp)]);
        }
        a
    }
}

/// How the service starts `conduit sandbox-net` by default: its own executable, as the kernel
/// has it (still there after an upgrade replaced the file on disk).
pub const OWN_EXECUTABLE: &str = "/proc/self/exe";

/// A service on the other end of a URL in a child's environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reached {
    pub port: u16,
    /// On this machine's loopback (`127.0.0.0/8`, `::1`, `localhost`).
    pub loopback: bool,
}

/// The services a child's environment points it at: the URLs in `*_BASE_URL`, `*_API_URL`
/// and `*_ENDPOINT` variables (its model API) and the proxy variables.
pub fn reached(env: &[(String, String)]) -> Vec<Reached> {
    let mut found = Vec::new();
    for (name, value) in env {
        let upper = name.to_ascii_uppercase();
        let names_a_service = ["_BASE_URL", "_API_URL", "_ENDPOINT"].iter().any(|s| upper.ends_with(s))
            || (upper.ends_with("_PROXY") && upper != "NO_PROXY");
        if !names_a_service {
            continue;
        }
        let Ok(url) = reqwest::Url::parse(value.trim()) else { continue };
        if !matches!(url.scheme(), "http" | "https" | "ws" | "wss" | "socks5" | "socks5h") {
            continue;
        }
        let Some(port) = url.port_or_known_default().or_else(|| url.scheme().starts_with("socks").then_some(1080))
        else {
            continue;
        };
        let loopback = match url.host() {
            Some(url::Host::Domain(d)) => {
                d.eq_ignore_ascii_case("localhost") || d.to_ascii_lowercase().ends_with(".localhost")
            }
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            None => false,
        };
        let reached = Reached { port, loopback };
        if !found.contains(&reached) {
            found.push(reached);
        }
    }
    found
}

/// Whether `/etc/resolv.conf`'s text names only resolvers on loopback (systemd-resolved's
/// 127.0.0.53, a local dnsmasq): then DNS must be let through to this machine's port 53.
pub fn resolver_on_loopback(resolv_conf: &str) -> bool {
    let servers: Vec<std::net::IpAddr> = resolv_conf
        .lines()
        .filter_map(|l| l.trim().strip_prefix("nameserver"))
        .filter_map(|rest| rest.trim().split('%').next()?.parse().ok())
        .collect();
    servers.iter().any(std::net::IpAddr::is_loopback)
}

/// `conduit sandbox-net`'s arguments: pasta, the loopback ports (or the holder of a network
/// made ahead of time to join), and bubblewrap's command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub pasta: PathBuf,
    pub tcp: Vec<u16>,
    pub udp: Vec<u16>,
    pub join: Option<i32>,
    pub bwrap: Vec<String>,
}

/// Runs `conduit sandbox-net`. Returns only on failure, with the status to exit with.
pub fn launch(launch: Launch) -> u8 {
    let started = match launch.join {
        Some(holder) => launcher::join(holder, &launch.bwrap),
        None => launcher::run(launch),
    };
    match started {
        Ok(never) => match never {},
        Err(e) => {
            eprintln!("conduit sandbox-net: the sandbox's network cannot be set up, not starting it: {e}");
            CANNOT_SANDBOX
        }
    }
}

/// The holder's pid in a made network's word, `ready <holder pid>` (a warden's first line; the
/// on-the-spot helper's report).
pub fn holder_in(line: &str) -> Option<i32> {
    line.trim().strip_prefix("ready ").and_then(|pid| pid.parse::<i32>().ok()).filter(|pid| *pid > 1)
}

/// Runs `conduit sandbox-net-warden` (a network made ahead of time). Returns its exit status.
pub fn warden(pasta: &Path, ports: &Ports) -> u8 {
    warden::run(pasta, &ports.tcp, &ports.udp)
}

#[path = "network_launcher.rs"]
mod launcher;
#[path = "network_warden.rs"]
mod warden;

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn the_services_a_child_is_pointed_at_are_read_from_its_urls() {
        let found = reached(&env(&[
            ("ANTHROPIC_BASE_URL", "http://127.0.0.1:8080/v1"),
            ("OPENAI_BASE_URL", "https://api.openai.com/v1"),
            ("GOOGLE_GEMINI_BASE_URL", "http://localhost:9000"),
            ("HTTPS_PROXY", "http://[::1]:3128"),
            ("no_proxy", "http://127.0.0.1:1"),
            ("MY_ENDPOINT", "ftp://127.0.0.1:21"),
            ("DATABASE_URL", "postgres://127.0.0.1:5432/x"),
            ("PATH", "/usr/bin"),
        ]));
        assert_eq!(
            found,
            [
                Reached { port: 8080, loopback: true },
                Reached { port: 443, loopback: false },
                Reached { port: 9000, loopback: true },
                Reached { port: 3128, loopback: true },
            ]
        );
    }

    #[test]
    fn a_plan_opens_what_is_asked_never_the_services_port() {
        let mut plan = NetworkPlan::new("/usr/bin/pasta".into(), true, OWN_EXECUTABLE.into());
        plan.open_host_ports([8080, 3100]);
        plan.close_host_port(3100);
        assert_eq!(plan.host_tcp_ports(Some(9001)), [53, 8080, 9001]);
        let (program, args) = plan.wrap("/usr/bin/bwrap", vec!["--dev".into(), "/dev".into()], None, None);
        assert_eq!(program, OWN_EXECUTABLE);
        assert_eq!(
            args.join(" "),
            "sandbox-net --pasta /usr/bin/pasta --tcp 53,8080 --udp 53 -- /usr/bin/bwrap --dev /dev"
        );
        let closed = NetworkPlan::new("pasta".into(), false, OWN_EXECUTABLE.into());
        assert_eq!(closed.wrap("bwrap", vec![], None, None).1.join(" "), "sandbox-net --pasta pasta -- bwrap");
        let joined = plan.wrap("bwrap", vec![], Some(9001), Some(4242)).1.join(" ");
        assert_eq!(
            joined, "sandbox-net --pasta /usr/bin/pasta --join 4242 -- bwrap",
            "its ports were set when it was made"
        );
        assert_eq!(plan.ports(Some(9001)), Ports { tcp: vec![53, 8080, 9001], udp: vec![53] });
    }

    #[test]
    fn a_resolver_on_loopback_is_told_apart() {
        assert!(resolver_on_loopback("# x\nnameserver 127.0.0.53\noptions edns0\n"));
        assert!(resolver_on_loopback("nameserver ::1\n"));
        assert!(!resolver_on_loopback("nameserver 10.255.255.53\n"));
        assert!(!resolver_on_loopback("nameserver fe80::1%eth0\n"));
        assert!(!resolver_on_loopback(""));
    }
}
