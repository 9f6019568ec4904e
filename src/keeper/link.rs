//! The service's side of a keeper: start one ([`start`]), connect to one that is already there
//! ([`Connection::connect`], after a restart), and turn the connection into what the CLI
//! supervisor reads and writes ([`Connection::attach`]): the CLI's numbered output as one
//! stream, its stdin as a queue, its exit as a future, and a [`KeeperHandle`] for pins,
//! acknowledgements, the release and the detach.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_util::stream;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::UnixStream;
use tokio::sync::{mpsc, oneshot};

use super::spec::{Spec, Started};
use super::wire::{split_frame, FromKeeper, Hello, Line, Stream, ToKeeper, WaitStatus};
use crate::supervisor::spawn::Exit;
use crate::transport::{stdio::STDIN_QUEUE, CliOutput, OutLine};

/// How long a keeper may take to start its CLI, or to say hello.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);
/// Stored lines are acknowledged to the keeper at most this often.
const ACK_EVERY: Duration = Duration::from_millis(100);

/// Waits until everything queued for the store so far is stored; false when it could not be.
pub type Durable = Arc<dyn Fn() -> Pin<Box<dyn std::future::Future<Output = bool>>>>;

/// A keeper just started, its CLI running.
pub struct Launched {
    pub keeper_pid: i32,
    pub cli_pid: i32,
    pub cli_started_at: Option<String>,
    pub connection: Connection,
}

/// Starts `conduit keeper` (`launcher`) for `spec` and connects to it. On failure nothing of it
/// is left running (the guardian ends the CLI when the keeper exits) and the error says why.
pub async fn start(launcher: &Path, spec: &Spec) -> Result<Launched, String> {
    let text = serde_json::to_vec(spec).map_err(|e| format!("cannot write the keeper's spec: {e}"))?;
    let mut child = tokio::process::Command::new(launcher)
        // As `ps` shows it (the launcher may be /proc/self/exe).
        .arg0("conduit-keeper")
        .arg("keeper")
        .env_clear()
        .env(super::spec::KEEPER_MARKER_ENV, &spec.session)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(false)
        .spawn()
        .map_err(|e| format!("cannot start the keeper {}: {e}", launcher.display()))?;
    let (Some(mut stdin), Some(mut stdout)) = (child.stdin.take(), child.stdout.take()) else {
        let _ = child.start_kill();
        return Err("the keeper started without its standard streams".to_string());
    };
    // The keeper is a child of this service only until the service goes; tokio reaps it if it
    // ends meanwhile.
    drop(child);
    let answer = async move {
        stdin.write_all(&text).await.map_err(|e| format!("cannot hand the keeper its spec: {e}"))?;
        drop(stdin);
        let mut line = Vec::new();
        let mut byte = [0u8; 1];
        while stdout.read(&mut byte).await.map_err(|e| format!("cannot read the keeper's answer: {e}"))? == 1 {
            if byte[0] == b'\n' {
                break;
            }
            line.push(byte[0]);
        }
        serde_json::from_slice::<Started>(&line).map_err(|_| "the keeper ended without an answer".to_string())
    };
    let started = tokio::time::timeout(ANSWER_TIMEOUT, answer)
        .await
        .map_err(|_| format!("the keeper did not answer within {ANSWER_TIMEOUT:?}"))??;
    let (keeper_pid, cli_pid, cli_started_at) = match started {
        Started::Ok { keeper_pid, cli_pid, cli_started_at } => (keeper_pid, cli_pid, cli_started_at),
        Started::Error(why) => return Err(why),
    };
    match Connection::connect(&spec.socket).await {
        Ok(connection) => Ok(Launched { keeper_pid, cli_pid, cli_started_at, connection }),
        Err(e) => {
            // Unreachable, it would keep its CLI for nobody: its guardian ends the CLI.
            crate::process::kill::signal_pid(keeper_pid, libc::SIGKILL).ok();
            Err(format!("cannot reach the keeper at {}: {e}", spec.socket.display()))
        }
    }
}

/// A connection to a keeper that said hello.
pub struct Connection {
    read: OwnedReadHalf,
    write: OwnedWriteHalf,
    /// Bytes read after the hello.
    inbox: Vec<u8>,
    pub hello: Hello,
}

impl Connection {
    pub async fn connect(socket: &Path) -> std::io::Result<Connection> {
        let hello = async {
            let stream = UnixStream::connect(socket).await?;
            let (mut read, write) = stream.into_split();
            let mut inbox = Vec::new();
            loop {
                if let Some((tag, payload, used)) = split_frame(&inbox).map_err(std::io::Error::other)? {
                    let FromKeeper::Hello(hello) = FromKeeper::decode(tag, payload).map_err(std::io::Error::other)?
                    else {
                        return Err(std::io::Error::other("the keeper did not say hello first"));
                    };
                    inbox.drain(..used);
                    return Ok(Connection { read, write, inbox, hello });
                }
                let mut chunk = [0u8; 4096];
                match read.read(&mut chunk).await? {
                    0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                    n => inbox.extend_from_slice(&chunk[..n]),
                }
            }
        };
        tokio::time::timeout(ANSWER_TIMEOUT, hello)
            .await
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "the keeper did not say hello"))?
    }

    /// Attaches: lines after `stored_through` come as new, and the requests stored but not
    /// answered up to it as seen. Call it inside the actix runtime.
    pub fn attach(self, stored_through: u64, durable: Durable) -> Attached {
        let Connection { read, write, inbox, hello } = self;
        let (stdin, lines) = mpsc::channel::<OutLine>(STDIN_QUEUE);
        let (control, orders) = mpsc::unbounded_channel::<ToKeeper>();
        let _ = control.send(ToKeeper::Attach { stored_through });
        let detaching = Arc::new(AtomicBool::new(false));
        let (drained_tx, drained) = oneshot::channel::<()>();
        tokio::spawn(write_to_keeper(write, lines, orders, (detaching.clone(), drained_tx)));
        let (exit_tx, exit_rx) = oneshot::channel();
        let sandboxed = hello.sandboxed;
        let output = Box::pin(read_from_keeper(read, inbox, exit_tx, sandboxed));
        let exited = Box::pin(async move {
            exit_rx.await.unwrap_or_else(|_| Exit { how: "lost its keeper".to_string(), code: None, signal: None })
        });
        let recorded = Arc::new(Recorded { through: AtomicU64::new(stored_through), news: tokio::sync::Notify::new() });
        actix::spawn(acknowledge(control.downgrade(), recorded.clone(), stored_through, durable));
        Attached {
            stdin,
            output,
            exited,
            handle: KeeperHandle { control, detaching, recorded, drained: Some(drained), keeper_pid: hello.keeper_pid },
            hello,
        }
    }
}

/// A keeper's CLI, as the supervisor takes it.
pub struct Attached {
    pub stdin: mpsc::Sender<OutLine>,
    pub output: Pin<Box<dyn futures_util::Stream<Item = CliOutput>>>,
    pub exited: Pin<Box<dyn std::future::Future<Output = Exit>>>,
    pub handle: KeeperHandle,
    pub hello: Hello,
}

/// What the supervisor tells a keeper besides its CLI's input.
pub struct KeeperHandle {
    control: mpsc::UnboundedSender<ToKeeper>,
    detaching: Arc<AtomicBool>,
    recorded: Arc<Recorded>,
    /// Resolves once the writer has written every queued line and stopped.
    drained: Option<oneshot::Receiver<()>>,
    pub keeper_pid: i32,
}

impl KeeperHandle {
    /// Line `seq` asks: the keeper keeps it until its answer (or [`KeeperHandle::unpin`]).
    pub fn pin(&self, seq: u64) {
        let _ = self.control.send(ToKeeper::Pin { seq });
    }

    /// Line `seq`'s request will not be answered (withdrawn).
    pub fn unpin(&self, seq: u64) {
        let _ = self.control.send(ToKeeper::Unpin { seq });
    }

    /// Line `seq` was handed to the store: it is acknowledged once stored.
    pub fn recorded(&self, seq: u64) {
        if self.recorded.through.fetch_max(seq, Ordering::Relaxed) < seq {
            self.recorded.news.notify_one();
        }
    }

    /// Every line handed to the store so far is stored: the keeper may forget them (the
    /// acknowledgement that would come within 100 ms, now).
    pub fn acknowledge_recorded(&self) {
        let through = self.recorded.through.load(Ordering::Relaxed);
        if through > 0 {
            let _ = self.control.send(ToKeeper::Ack { through });
        }
    }

    /// The CLI's end is recorded: the keeper may go.
    pub fn release(&self) {
        let _ = self.control.send(ToKeeper::Release);
    }

    /// The service leaves the CLI running: when the stdin queue closes (drop its sender), the
    /// lines in it are written, but the keeper is not told to close the CLI's stdin; the
    /// connection ends. Resolves once those lines are written.
    pub fn detach(&mut self) -> impl std::future::Future<Output = ()> {
        self.detaching.store(true, Ordering::SeqCst);
        let drained = self.drained.take();
        async move {
            if let Some(drained) = drained {
                let _ = drained.await;
            }
        }
    }
}

/// Writes stdin lines and orders to the keeper, until the handle goes. When the stdin queue
/// closes in a detach, `drained` hears that every line queued before is written (the orders,
/// a last acknowledgement, still go until the handle goes).
async fn write_to_keeper(
    mut write: OwnedWriteHalf,
    mut lines: mpsc::Receiver<OutLine>,
    mut orders: mpsc::UnboundedReceiver<ToKeeper>,
    (detaching, drained): (Arc<AtomicBool>, oneshot::Sender<()>),
) {
    let mut drained = Some(drained);
    let mut frame = Vec::new();
    let mut lines_open = true;
    loop {
        frame.clear();
        let mut written = None;
        tokio::select! {
            biased;
            order = orders.recv() => match order {
                Some(order) => order.encode(&mut frame),
                None => break,
            },
            line = lines.recv(), if lines_open => match line {
                Some(OutLine { line, written: heard, unpin }) => {
                    ToKeeper::Stdin { line: line.into_bytes(), unpin }.encode(&mut frame);
                    written = heard;
                }
                None => {
                    lines_open = false;
                    if detaching.load(Ordering::SeqCst) {
                        if let Some(drained) = drained.take() {
                            let _ = drained.send(());
                        }
                        continue;
                    }
                    ToKeeper::CloseStdin.encode(&mut frame);
                }
            },
        }
        if write.write_all(&frame).await.is_err() {
            break;
        }
        if let Some(heard) = written {
            let _ = heard.send(());
        }
    }
}

/// The keeper's frames as the supervisor's output items; the exit goes to `exited`. A
/// connection that ends before the CLI's end was told is a lost keeper.
fn read_from_keeper(
    read: OwnedReadHalf,
    inbox: Vec<u8>,
    exited: oneshot::Sender<Exit>,
    sandboxed: bool,
) -> impl futures_util::Stream<Item = CliOutput> {
    struct State {
        read: OwnedReadHalf,
        frames: Inbox,
        exited: Option<oneshot::Sender<Exit>>,
        done: bool,
    }
    let state = State { read, frames: Inbox { buf: inbox, start: 0 }, exited: Some(exited), done: false };
    stream::unfold(state, move |mut s| async move {
        loop {
            if s.done {
                return None;
            }
            let item = match s.frames.next() {
                Ok(Some(frame)) => match frame {
                    FromKeeper::Line(Line { seq, stream: Stream::Stdout, frame, seen: true }) => {
                        CliOutput::Seen { seq, frame }
                    }
                    FromKeeper::Line(Line { seen: true, .. }) | FromKeeper::Hello(_) => continue,
                    FromKeeper::Line(Line { seq, stream, frame, seen: false }) => {
                        CliOutput::Numbered { seq, stream, frame }
                    }
                    FromKeeper::End { stream: Stream::Stdout, .. } => CliOutput::StdoutEnd,
                    FromKeeper::End { stream: Stream::Stderr, .. } => CliOutput::StderrEnd,
                    FromKeeper::Exit { status: WaitStatus(raw), .. } => {
                        if let Some(tx) = s.exited.take() {
                            let _ = tx.send(Exit::of(std::process::ExitStatus::from_raw(raw), sandboxed));
                        }
                        continue;
                    }
                },
                Ok(None) => match s.frames.fill(&mut s.read).await {
                    Ok(true) => continue,
                    _ => {
                        s.done = true;
                        // Without its exit, the keeper was lost (killed): its guardian ended the CLI.
                        let tx = s.exited.take()?;
                        let _ = tx.send(Exit { how: "lost its keeper".to_string(), code: None, signal: None });
                        CliOutput::KeeperLost
                    }
                },
                Err(e) => {
                    s.done = true;
                    CliOutput::Failed(e.to_string())
                }
            };
            return Some((item, s));
        }
    })
}

/// Bytes read from a keeper: frames are cut off the front without moving what follows (a
/// read's hundreds of small lines cost one compaction, not one each), and a large one is read
/// into room made for it at once and taken out whole.
struct Inbox {
    buf: Vec<u8>,
    /// Where the first frame not yet taken starts.
    start: usize,
}

impl Inbox {
    /// The next whole frame, if one is there.
    fn next(&mut self) -> Result<Option<FromKeeper>, super::wire::WireError> {
        let Some((_, _, used)) = split_frame(&self.buf[self.start..])? else { return Ok(None) };
        if self.start == 0 && used == self.buf.len() {
            // Alone in the buffer (as a large line always is): taken out without a copy.
            return FromKeeper::decode_owned(std::mem::take(&mut self.buf)).map(Some);
        }
        let frame = FromKeeper::decode_owned(self.buf[self.start..self.start + used].to_vec());
        self.start += used;
        if self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        }
        frame.map(Some)
    }

    /// Reads more; false at the end of the connection.
    async fn fill(&mut self, read: &mut OwnedReadHalf) -> std::io::Result<bool> {
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        // Room for the whole frame that has begun (its length is known), else for a read.
        let wanted = super::wire::frame_len(&self.buf).unwrap_or(0).max(self.buf.len() + 64 * 1024);
        self.buf.reserve_exact(wanted.saturating_sub(self.buf.len()));
        Ok(read.read_buf(&mut self.buf).await? > 0)
    }
}

/// The last line handed to the store, and a wake-up for the acknowledgements when it moves.
struct Recorded {
    through: AtomicU64,
    news: tokio::sync::Notify,
}

/// Acknowledges stored lines to the keeper, at most every [`ACK_EVERY`] (and not at all while
/// the CLI is quiet), until the handle goes.
async fn acknowledge(
    control: mpsc::WeakUnboundedSender<ToKeeper>,
    recorded: Arc<Recorded>,
    mut acked: u64,
    durable: Durable,
) {
    loop {
        // Woken by a new line, or now and then to see whether the handle is gone.
        let _ = tokio::time::timeout(Duration::from_secs(5), recorded.news.notified()).await;
        tokio::time::sleep(ACK_EVERY).await;
        let through = recorded.through.load(Ordering::Relaxed);
        if through > acked && durable().await {
            let Some(control) = control.upgrade() else { return };
            if control.send(ToKeeper::Ack { through }).is_err() {
                return;
            }
            acked = through;
        } else if control.upgrade().is_none() {
            return;
        }
    }
}

/// Where a session's keeper listens: `<data folder>/keepers/<session id>.sock`.
pub fn socket_path(data: &Path, session: &str) -> PathBuf {
    data.join("keepers").join(format!("{session}.sock"))
}
