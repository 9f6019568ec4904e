//! Sandbox networks made ahead of time (see `sandbox::network`'s warden): a sandboxed launch
//! takes one that lets the same loopback ports through instead of waiting for pasta to start.
//! One actor owns every spare; the encloser asks it with [`Take`].
//!
//! A set of ports is kept warm from the first launch that asks for it: [`SPARES`] networks are
//! made in the background whenever fewer are ready, for at most [`KEYS`] sets of ports; a set
//! nobody took for [`FORGET_AFTER`] is let go (its networks ended). A launch that finds none
//! ready makes its own network, as without the pool. Spares end with the service: their
//! wardens die with it, and dropping one ends its process group.

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use actix::prelude::*;

use crate::process::cgroup::Cgroup;
use crate::sandbox::network::Ports;

/// Networks kept ready for each set of ports.
pub const SPARES: usize = 1;
/// Sets of ports kept warm at once.
const KEYS: usize = 4;
/// A set of ports nobody took for this long is let go.
const FORGET_AFTER: Duration = Duration::from_secs(600);
/// How long a warden may take to say it is ready.
const READY_WITHIN: Duration = Duration::from_secs(15);

/// A network made ahead of time, ready to be joined. Dropped, it ends.
pub struct Spare {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    /// The process holding its namespaces: what `sandbox-net --join` joins.
    holder: i32,
    /// Handed to a sandbox, or ended: nothing more to do.
    done: bool,
}

impl Spare {
    /// Ends it: its warden's process group (the warden, its holder, its pasta). Only while the
    /// warden is still this service's unreaped child, so its pid cannot name anyone else.
    fn end(&mut self) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        let warden = self.child.id() as i32;
        if warden > 1 && matches!(self.child.try_wait(), Ok(None)) {
            // SAFETY: the warden leads its own process group (spawned with process_group(0)).
            unsafe { libc::killpg(warden, libc::SIGKILL) };
        }
        let _ = self.child.wait();
    }
}

impl Drop for Spare {
    fn drop(&mut self) {
        self.end();
    }
}

/// A network taken for one sandbox. Hand it over once the sandbox runs; dropped before that,
/// it ends.
pub struct TakenNetwork {
    spare: Spare,
}

impl TakenNetwork {
    /// What the sandbox joins.
    pub fn holder(&self) -> i32 {
        self.spare.holder
    }

    /// The sandbox `pid` joined it: its warden, holder and pasta move into the sandbox's
    /// cgroup (they end with it), and the warden is told to live as long as `pid` does.
    /// Blocking (cgroupfs writes, a pipe write of a few bytes).
    pub fn hand_over(mut self, pid: i32, cgroup: Option<&Cgroup>) {
        let warden = self.spare.child.id() as i32;
        if let Some(cgroup) = cgroup {
            if let Err(e) = cgroup.adopt(warden) {
                tracing::warn!(error = %e, "a sandbox's network could not join its cgroup; it ends with the sandbox all the same");
            }
        }
        let told = self.spare.stdin.take().map(|mut stdin| writeln!(stdin, "take {pid}").and_then(|()| stdin.flush()));
        if matches!(told, Some(Ok(()))) {
            // It lives as long as the sandbox now; its exit is reaped with the service's other
            // orphans.
            self.spare.done = true;
        } else {
            tracing::warn!(%pid, "a sandbox's network could not be handed over; it is ended");
        }
    }
}

/// A network for these ports, if one is ready (`None`: make one). The set is kept warm from now.
#[derive(Message)]
#[rtype(result = "Option<TakenNetwork>")]
pub struct Take(pub Ports);

/// A warden finished starting (or failed to).
#[derive(Message)]
#[rtype(result = "()")]
struct Made(Ports, Result<Spare, String>);

/// Lets go of sets of ports nobody asked for lately.
#[derive(Message)]
#[rtype(result = "()")]
struct Forget;

#[derive(Default)]
struct Warm {
    ready: VecDeque<Spare>,
    starting: usize,
    asked: Option<Instant>,
}

/// The spares, by the ports they let through.
pub struct NetworkPool {
    launcher: PathBuf,
    pasta: PathBuf,
    warm: HashMap<Ports, Warm>,
}

impl NetworkPool {
    /// A pool whose wardens are `launcher sandbox-net-warden --pasta <pasta>`.
    pub fn new(launcher: PathBuf, pasta: PathBuf) -> NetworkPool {
        NetworkPool { launcher, pasta, warm: HashMap::new() }
    }

    fn refill(&mut self, ports: &Ports, ctx: &mut Context<Self>) {
        let Some(warm) = self.warm.get_mut(ports) else { return };
        let wanted = SPARES.saturating_sub(warm.ready.len() + warm.starting);
        warm.starting += wanted;
        for _ in 0..wanted {
            let (launcher, pasta, key) = (self.launcher.clone(), self.pasta.clone(), ports.clone());
            let args = ports.arguments();
            let made = tokio::task::spawn_blocking(move || start_warden(&launcher, &pasta, &args));
            ctx.spawn(
                async move { made.await.unwrap_or_else(|e| Err(format!("the warden's start was interrupted: {e}"))) }
                    .into_actor(self)
                    .map(move |made, _act, ctx| ctx.notify(Made(key, made))),
            );
        }
    }
}

/// Starts one warden and waits for its `ready <holder>`. Blocking.
fn start_warden(launcher: &std::path::Path, pasta: &std::path::Path, ports: &[String]) -> Result<Spare, String> {
    use std::os::unix::process::CommandExt;
    let mut child = std::process::Command::new(launcher)
        .arg0("conduit")
        .arg("sandbox-net-warden")
        .arg("--pasta")
        .arg(pasta)
        .args(ports)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .process_group(0)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start a network warden: {e}"))?;
    let stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let mut spare = Spare { child, stdin, holder: 0, done: false };
    let Some(stdout) = stdout else { return Err("the warden started without its output".to_string()) };
    // The warden says one line; a hung one is ended by the deadline's kill below.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = std::io::BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx.recv_timeout(READY_WITHIN).unwrap_or_default();
    match crate::sandbox::network::holder_in(&line) {
        Some(holder) => {
            spare.holder = holder;
            Ok(spare)
        }
        None => Err(format!("the network warden did not start: {:?}", line.trim())),
    }
}

impl Actor for NetworkPool {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(FORGET_AFTER / 10, |_act, ctx| ctx.notify(Forget));
    }
}

impl Handler<Take> for NetworkPool {
    type Result = Option<TakenNetwork>;

    fn handle(&mut self, Take(ports): Take, ctx: &mut Context<Self>) -> Option<TakenNetwork> {
        if !self.warm.contains_key(&ports) && self.warm.len() >= KEYS {
            return None;
        }
        let warm = self.warm.entry(ports.clone()).or_default();
        warm.asked = Some(Instant::now());
        let mut taken = None;
        while let Some(mut spare) = warm.ready.pop_front() {
            // A warden that ended (its pasta failed) is no network; dropped, it is reaped.
            if matches!(spare.child.try_wait(), Ok(None)) {
                taken = Some(TakenNetwork { spare });
                break;
            }
        }
        self.refill(&ports, ctx);
        taken
    }
}

impl Handler<Made> for NetworkPool {
    type Result = ();

    fn handle(&mut self, Made(ports, made): Made, _ctx: &mut Context<Self>) {
        let Some(warm) = self.warm.get_mut(&ports) else { return };
        warm.starting = warm.starting.saturating_sub(1);
        match made {
            Ok(spare) => warm.ready.push_back(spare),
            // The next take tries again; until then launches make their own.
            Err(e) => tracing::warn!(error = %e, "a sandbox network could not be made ahead of time"),
        }
    }
}

impl Handler<Forget> for NetworkPool {
    type Result = ();

    fn handle(&mut self, _: Forget, _ctx: &mut Context<Self>) {
        self.warm.retain(|_, warm| warm.starting > 0 || warm.asked.is_some_and(|at| at.elapsed() < FORGET_AFTER));
    }
}
