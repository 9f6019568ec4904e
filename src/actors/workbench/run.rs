//! The tasks that follow a started process to its end: an exec command's output goes to its
//! caller; a background process's to its logs (and its topic on the bus). Both report the end
//! to the workbench and wait until it is recorded, so whoever sees the end can read the row.

use std::path::PathBuf;

use actix::Addr;
use actix_web::web::Bytes;
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, watch};

use super::logs::{self, LogMark, Stream};
use super::pipes::{self, Output};
use super::spawn::Running;
use super::{output_channel, Deps, Finished, Workbench};
use crate::actors::bus::{Event, Publish, Secrets};
use crate::domain::ids::ProcessId;
use crate::supervisor::process::ProcessGone;

/// Follows an exec command; its output, then its end, come through the receiver.
pub fn exec(
    addr: Addr<Workbench>,
    id: ProcessId,
    running: Running,
    timeout: Option<std::time::Duration>,
    deps: &Deps,
) -> mpsc::Receiver<Output> {
    let (tx, rx) = output_channel();
    let (cap, gone) = (deps.settings.exec_output_bytes, deps.gone.clone());
    actix::spawn(async move {
        let pid = running.pid;
        let ended = pipes::watch(running, timeout, cap, &tx).await;
        gone.do_send(ProcessGone { id: id.to_string(), pid, reason: None });
        let _ = addr.send(Finished { id, ended: ended.clone() }).await;
        let _ = tx.send(Output::Ended(ended)).await;
    });
    rx
}

/// One log file being written, up to its cap (the watcher forwards no more than that).
struct LogFile {
    path: PathBuf,
    file: Option<tokio::fs::File>,
}

impl LogFile {
    async fn open(path: PathBuf) -> LogFile {
        let file = match tokio::fs::File::create(&path).await {
            Ok(f) => Some(f),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "cannot create a process log; its output is dropped");
                None
            }
        };
        LogFile { path, file }
    }

    async fn write(&mut self, data: &[u8]) -> bool {
        let Some(file) = self.file.as_mut() else { return false };
        // Flushed at once: a follower told of these bytes must find them in the file.
        let written = match file.write_all(data).await {
            Ok(()) => file.flush().await,
            Err(e) => Err(e),
        };
        if let Err(e) = written {
            tracing::warn!(path = %self.path.display(), error = %e, "cannot write a process log; the rest is dropped");
            self.file = None;
            return false;
        }
        true
    }

    async fn close(&mut self) {
        if let Some(file) = self.file.as_mut() {
            let _ = file.flush().await;
        }
    }
}

/// Follows a background process: its output into its logs, each chunk on its bus topic, the
/// progress on the returned watch.
pub fn background(addr: Addr<Workbench>, id: ProcessId, running: Running, deps: &Deps) -> watch::Receiver<LogMark> {
    let (mark_tx, mark_rx) = watch::channel(LogMark::default());
    let (tx, mut rx) = output_channel();
    let (root, cap, bus, gone) = (deps.dir.clone(), deps.settings.log_bytes, deps.bus.clone(), deps.gone.clone());
    let at_rest = deps.redaction.at_rest();
    let pid = running.pid;
    actix::spawn(async move {
        let _ = tokio::fs::create_dir_all(logs::logs_dir(&root)).await;
        let mut out = LogFile::open(logs::log_path(&root, &id, Stream::Stdout)).await;
        let mut err = LogFile::open(logs::log_path(&root, &id, Stream::Stderr)).await;
        let watcher = async {
            let ended = pipes::watch(running, None, cap, &tx).await;
            gone.do_send(ProcessGone { id: id.to_string(), pid, reason: None });
            drop(tx);
            ended
        };
        let writer = async {
            while let Some(item) = rx.recv().await {
                let Output::Chunk(stream, data) = item else { continue };
                // Pieces end at line ends (see aligned.rs): each holds its secrets whole.
                let data = if at_rest { without_secrets(data) } else { data };
                let (file, offset) = match stream {
                    Stream::Stdout => (&mut out, mark_tx.borrow().stdout),
                    Stream::Stderr => (&mut err, mark_tx.borrow().stderr),
                };
                if !file.write(&data).await {
                    continue;
                }
                mark_tx.send_modify(|m| match stream {
                    Stream::Stdout => m.stdout += data.len() as u64,
                    Stream::Stderr => m.stderr += data.len() as u64,
                });
                let text = String::from_utf8_lossy(&data);
                let chunk = serde_json::json!({ "stream": stream, "offset": offset, "data": text });
                let mut event = Event::for_process("process.output", stream.as_str(), id.as_str(), chunk.to_string());
                event.topic_only = true;
                if at_rest {
                    event.secrets = Secrets::Redacted;
                }
                bus.do_send(Publish(event));
            }
            out.close().await;
            err.close().await;
        };
        let (ended, ()) = tokio::join!(watcher, writer);
        let _ = addr.send(Finished { id, ended }).await;
        mark_tx.send_modify(|m| m.ended = true);
    });
    mark_rx
}

/// A piece of output as the log keeps it under `at_rest`: without its secrets (as text, invalid
/// UTF-8 replaced), or as it came when it holds none.
fn without_secrets(data: Bytes) -> Bytes {
    let text = String::from_utf8_lossy(&data);
    match crate::redact::Redactor::standard().redact(&text) {
        std::borrow::Cow::Borrowed(_) => data,
        std::borrow::Cow::Owned(clean) => Bytes::from(clean),
    }
}
