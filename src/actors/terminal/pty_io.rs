//! The two tasks on a terminal's PTY master: the reader, which hands each chunk of output to
//! the terminal and reads the next only once the terminal took it (so a shell that outruns its
//! clients is held back, as a real terminal holds back a program that writes faster than it
//! draws), and the writer, which owns the write half: input and resizes, in order.

use actix::prelude::*;
use actix_web::web::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

use super::terminal::Terminal;
use crate::domain::terminal::Size;

/// The most read from the PTY at once.
pub const READ_CHUNK: usize = 64 * 1024;

/// A chunk of output; answers once every client queued it (or was detached).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Output(pub Bytes);

/// The PTY gave its last output (every slave descriptor closed, or the master failed).
#[derive(Message)]
#[rtype(result = "()")]
pub struct OutputEnded;

/// What the writer task does with the master's write half, in order.
pub enum ToPty {
    Bytes(Bytes),
    Resize(Size),
}

/// Reads until EOF or EIO (every slave descriptor closed), then says so.
pub async fn read_from_pty(mut reader: pty_process::OwnedReadPty, terminal: Addr<Terminal>) {
    let mut buf = vec![0u8; READ_CHUNK];
    loop {
        match reader.read(&mut buf).await {
            Ok(n) if n > 0 => {
                if terminal.send(Output(Bytes::copy_from_slice(&buf[..n]))).await.is_err() {
                    return;
                }
            }
            _ => break,
        }
    }
    terminal.do_send(OutputEnded);
}

/// Writes input to the PTY and applies resizes, in order, until the terminal drops its sender.
pub async fn write_to_pty(mut writer: pty_process::OwnedWritePty, mut queue: mpsc::Receiver<ToPty>) {
    while let Some(item) = queue.recv().await {
        let done = match item {
            ToPty::Bytes(bytes) => writer.write_all(&bytes).await.map_err(|e| e.to_string()),
            ToPty::Resize(size) => {
                writer.resize(pty_process::Size::new(size.rows, size.cols)).map_err(|e| e.to_string())
            }
        };
        if let Err(e) = done {
            tracing::debug!(error = %e, "a terminal's PTY no longer takes input");
            return;
        }
    }
}
