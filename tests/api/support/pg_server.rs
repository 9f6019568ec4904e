//! A PostgreSQL server of a test's own, for what the shared one of the suite's PostgreSQL pass
//! cannot be put through (stopped, started again). Debian's binaries, a temporary folder, a
//! free loopback port, run as `nobody` when the tests run as root (initdb refuses root), as
//! `scripts/with-postgres.sh` does. Stopped and removed when dropped, however the test ends.

use std::path::PathBuf;
use std::process::{Command, Stdio};

pub struct PgServer {
    bin: PathBuf,
    dir: tempfile::TempDir,
    pub port: u16,
}

fn postgres_bin() -> Option<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
        .filter(|(_, bin): &(u32, PathBuf)| bin.join("initdb").exists())
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

impl PgServer {
    /// Starts a server; `None` (with a note) where PostgreSQL is not installed.
    pub fn start() -> Option<PgServer> {
        let Some(bin) = postgres_bin() else {
            eprintln!("SKIPPED: no PostgreSQL server binaries (scripts/test-setup.sh installs them)");
            return None;
        };
        let dir = tempfile::tempdir().expect("tempdir");
        if unsafe { libc::geteuid() } == 0 {
            let status = Command::new("chown").arg("nobody").arg(dir.path()).status().expect("chown");
            assert!(status.success(), "chown the server's folder");
        }
        let mut server = PgServer { bin, dir, port: 0 };
        let data = server.data();
        let out = server
            .as_owner("initdb")
            .args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale", "-D"])
            .arg(&data)
            .output()
            .expect("initdb runs");
        assert!(out.status.success(), "initdb: {}", String::from_utf8_lossy(&out.stderr));
        // Another process may take the free port before the server binds it: then another.
        for _ in 0..3 {
            server.port = free_port();
            if server.pg_ctl_start() {
                return Some(server);
            }
        }
        panic!("the PostgreSQL server did not start: {}", server.log());
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn as_owner(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        if unsafe { libc::geteuid() } == 0 {
            let mut cmd = Command::new("runuser");
            cmd.args(["-u", "nobody", "--"]).arg(path);
            cmd
        } else {
            Command::new(path)
        }
    }

    fn pg_ctl_start(&self) -> bool {
        let options = format!(
            "-p {} -c listen_addresses=127.0.0.1 -k {} -c fsync=off -c max_connections=100",
            self.port,
            self.dir.path().display()
        );
        self.as_owner("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .arg("-l")
            .arg(self.dir.path().join("server.log"))
            .args(["-w", "-t", "60", "start", "-o", &options])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    /// Creates a database and returns its URL (superuser, trust authentication).
    pub fn create_database(&self, name: &str) -> String {
        super::database::create_database(&format!("postgres://postgres@127.0.0.1:{}", self.port), name)
    }

    /// Stops the server (fast: open connections are ended).
    pub fn stop(&self) {
        let status = self
            .as_owner("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .args(["-m", "fast", "-w", "stop"])
            .stdout(Stdio::null())
            .status()
            .expect("pg_ctl stop");
        assert!(status.success(), "the server stops: {}", self.log());
    }

    /// Starts the stopped server again, on the same port.
    pub fn restart(&self) {
        assert!(self.pg_ctl_start(), "the server starts again: {}", self.log());
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        let _ = self
            .as_owner("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .args(["-m", "immediate", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}
