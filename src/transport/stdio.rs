//! The stdio transport: the CLI's stdout and stderr as line streams, and a task that writes
//! queued lines to its stdin.

use futures_util::stream::{self, Stream, StreamExt};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use super::{CliOutput, OutLine};
use crate::db::backlog::Backlog;
use crate::protocol::framing::{Frame, LineFramer};

/// Lines queued for the CLI's stdin at most; a CLI that stops reading fills it and further
/// writes are refused instead of growing memory.
pub const STDIN_QUEUE: usize = 256;

/// The read buffer starts small (an idle session costs little) and doubles up to the maximum
/// while reads keep filling it (a flooding CLI gets large reads).
const READ_BUF_MIN: usize = 2 * 1024;
const READ_BUF_MAX: usize = 64 * 1024;

/// Splits a byte stream into frames; ends after the final (possibly unterminated) line. With a
/// `gate`, nothing more is read while the session's unstored backlog is full: the pipe fills
/// and the CLI waits, instead of lines being dropped.
pub fn frames<R: AsyncRead + Unpin + 'static>(
    reader: R,
    gate: Option<std::sync::Arc<Backlog>>,
) -> impl Stream<Item = Frame> {
    struct State<R> {
        reader: R,
        framer: LineFramer,
        ready: std::collections::VecDeque<Frame>,
        eof: bool,
        buf: Vec<u8>,
        gate: Option<std::sync::Arc<Backlog>>,
    }
    let state = State {
        reader,
        framer: LineFramer::default(),
        ready: Default::default(),
        eof: false,
        buf: vec![0; READ_BUF_MIN],
        gate,
    };
    stream::unfold(state, |mut s| async move {
        loop {
            if let Some(frame) = s.ready.pop_front() {
                return Some((frame, s));
            }
            if s.eof {
                return None;
            }
            if let Some(gate) = &s.gate {
                gate.room().await;
            }
            let mut out = Vec::new();
            match s.reader.read(&mut s.buf).await {
                Ok(0) | Err(_) => {
                    s.eof = true;
                    s.framer.finish(&mut out);
                }
                Ok(n) => {
                    s.framer.push(&s.buf[..n], &mut out);
                    if n == s.buf.len() && s.buf.len() < READ_BUF_MAX {
                        s.buf.resize(s.buf.len() * 2, 0);
                    }
                }
            }
            s.ready.extend(out);
        }
    })
}

/// stdout as protocol frames followed by one `StdoutEnd`.
pub fn stdout_stream<R: AsyncRead + Unpin + 'static>(
    reader: R,
    gate: Option<std::sync::Arc<Backlog>>,
) -> impl Stream<Item = CliOutput> {
    frames(reader, gate).map(CliOutput::Stdout).chain(stream::once(async { CliOutput::StdoutEnd }))
}

/// stderr as lines followed by one `StderrEnd` (the session waits for it, so an error message
/// carries everything the CLI printed before it died).
pub fn stderr_stream<R: AsyncRead + Unpin + 'static>(
    reader: R,
    gate: Option<std::sync::Arc<Backlog>>,
) -> impl Stream<Item = CliOutput> {
    frames(reader, gate).map(CliOutput::Stderr).chain(stream::once(async { CliOutput::StderrEnd }))
}

/// Lines of a stream that carries no protocol (stdout on the WebSocket transport), kept with
/// stderr.
pub fn side_stream<R: AsyncRead + Unpin + 'static>(
    reader: R,
    gate: Option<std::sync::Arc<Backlog>>,
) -> impl Stream<Item = CliOutput> {
    frames(reader, gate).map(CliOutput::Stderr)
}

/// Holds back a transport's output while the session's backlog is full (the WebSocket bridge:
/// its bounded channel then fills and the socket stops being read).
pub fn gated<S: Stream<Item = CliOutput> + Unpin + 'static>(
    inner: S,
    gate: std::sync::Arc<Backlog>,
) -> impl Stream<Item = CliOutput> {
    stream::unfold((inner, gate), |(mut inner, gate)| async move {
        gate.room().await;
        inner.next().await.map(|item| (item, (inner, gate)))
    })
}

/// How much of one output stream is read ahead of its session. Enough for a session busy for
/// a moment (a turn's result waits for its commit) not to stop a flooding CLI; small beside
/// the session's backlog of unstored lines, which still bounds what is read.
pub const READ_AHEAD_BYTES: usize = 256 * 1024;

/// Reads `inner` ahead of whoever consumes the returned stream, up to `max_bytes` of lines (at
/// least one line), on a task of its own: while the consumer is busy with one item, the CLI's
/// pipe keeps draining instead of the CLI waiting. Order is kept; the task stops when the
/// returned stream is dropped or `inner` ends. Call it inside the actix runtime.
pub fn read_ahead<S>(mut inner: S, max_bytes: usize) -> impl Stream<Item = CliOutput>
where
    S: Stream<Item = CliOutput> + Unpin + 'static,
{
    let max_bytes = max_bytes.clamp(1, tokio::sync::Semaphore::MAX_PERMITS);
    let room = std::sync::Arc::new(tokio::sync::Semaphore::new(max_bytes));
    let (tx, mut rx) = mpsc::unbounded_channel();
    actix::spawn(async move {
        loop {
            let item = tokio::select! {
                item = inner.next() => item,
                () = tx.closed() => None,
            };
            let Some(item) = item else { break };
            let bytes = u32::try_from(item_bytes(&item).clamp(1, max_bytes)).unwrap_or(u32::MAX);
            let permit = tokio::select! {
                permit = room.clone().acquire_many_owned(bytes) => permit,
                () = tx.closed() => break,
            };
            let Ok(permit) = permit else { break };
            if tx.send((item, permit)).is_err() {
                break;
            }
        }
    });
    // The room a line took is given back as it is handed on.
    stream::poll_fn(move |cx| rx.poll_recv(cx).map(|next| next.map(|(item, _permit)| item)))
}

fn item_bytes(item: &CliOutput) -> usize {
    match item {
        CliOutput::Stdout(Frame::Line(line))
        | CliOutput::Stderr(Frame::Line(line))
        | CliOutput::Numbered { frame: Frame::Line(line), .. }
        | CliOutput::Seen { frame: Frame::Line(line), .. } => line.len(),
        CliOutput::Failed(why) => why.len(),
        _ => 1,
    }
}

/// Appends a stderr line to `tail`, keeping only its last `max` bytes (on a character
/// boundary): what an error message quotes of a CLI's stderr.
pub fn keep_tail(tail: &mut String, line: &str, max: usize) {
    tail.push_str(line);
    tail.push('\n');
    if tail.len() > max {
        let mut cut = tail.len() - max;
        while !tail.is_char_boundary(cut) {
            cut += 1;
        }
        tail.drain(..cut);
    }
}

/// Starts the stdin writer: each queued line is written with a newline and flushed (then its
/// `written` is told). Dropping every sender closes stdin (the CLI's cue to finish). The task
/// reports a write failure by ending, which closes the channel.
pub fn stdin_writer<W: AsyncWrite + Unpin + Send + 'static>(mut stdin: W) -> mpsc::Sender<OutLine> {
    let (tx, mut rx) = mpsc::channel::<OutLine>(STDIN_QUEUE);
    tokio::spawn(async move {
        while let Some(out) = rx.recv().await {
            let mut bytes = out.line.into_bytes();
            bytes.push(b'\n');
            if stdin.write_all(&bytes).await.is_err() || stdin.flush().await.is_err() {
                break;
            }
            if let Some(written) = out.written {
                let _ = written.send(());
            }
        }
        let _ = stdin.shutdown().await;
    });
    tx
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn frames_from_a_reader_end_with_the_unterminated_line() {
        let input: &[u8] = b"{\"a\":1}\r\n\npartial";
        let got: Vec<Frame> = frames(input, None).collect().await;
        assert_eq!(got, vec![Frame::Line("{\"a\":1}".into()), Frame::Line("partial".into())]);
    }

    #[tokio::test]
    async fn stdout_ends_with_a_marker() {
        let input: &[u8] = b"x\n";
        let got: Vec<CliOutput> = stdout_stream(input, None).collect().await;
        assert!(matches!(got.as_slice(), [CliOutput::Stdout(Frame::Line(_)), CliOutput::StdoutEnd]));
    }

    #[test]
    fn the_tail_keeps_the_last_bytes_on_a_character_boundary() {
        let mut tail = String::new();
        keep_tail(&mut tail, "ab", 7);
        assert_eq!(tail, "ab\n");
        // 11 bytes; the cut at 4 falls inside the two-byte "é" and moves past it.
        keep_tail(&mut tail, "é12345", 7);
        assert_eq!(tail, "12345\n");
    }

    #[tokio::test]
    async fn the_writer_writes_lines_and_closes_on_drop() {
        let (client, mut server) = tokio::io::duplex(1024);
        let tx = stdin_writer(client);
        let (written, heard) = tokio::sync::oneshot::channel();
        tx.send(OutLine { line: "one".into(), written: Some(written), unpin: None }).await.expect("send");
        tx.send(OutLine::new("two".into())).await.expect("send");
        drop(tx);
        let mut got = String::new();
        server.read_to_string(&mut got).await.expect("read");
        assert_eq!(got, "one\ntwo\n");
        heard.await.expect("the first line's writing was reported");
    }

    #[actix_rt::test]
    async fn output_is_read_ahead_up_to_its_room_and_handed_on_in_order() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::Arc;
        let read = Arc::new(AtomicUsize::new(0));
        let counter = read.clone();
        let inner =
            stream::iter((0..6).map(|i| CliOutput::Stdout(Frame::Line(format!("line {i:04}"))))).inspect(move |_| {
                counter.fetch_add(1, Ordering::SeqCst);
            });
        // Room for three 9-byte lines.
        let mut ahead = Box::pin(read_ahead(inner, 27));
        let settle = || async {
            for _ in 0..20 {
                tokio::task::yield_now().await;
            }
        };
        settle().await;
        // Three wait in the room and a fourth is read, waiting for room.
        assert_eq!(read.load(Ordering::SeqCst), 4);
        let mut got = Vec::new();
        while let Some(CliOutput::Stdout(Frame::Line(line))) = ahead.next().await {
            got.push(line);
            settle().await;
        }
        assert_eq!(got, (0..6).map(|i| format!("line {i:04}")).collect::<Vec<_>>());
        assert_eq!(read.load(Ordering::SeqCst), 6);
    }
}
