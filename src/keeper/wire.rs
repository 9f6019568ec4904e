//! What a keeper and the service say to each other over the keeper's socket: length-prefixed
//! frames (`u32` little-endian length of what follows, a tag byte, the payload), so a CLI's
//! lines travel as they are, whatever bytes they hold.
//!
//! The keeper numbers everything its CLI writes (both streams, one sequence: a line's number is
//! its `cli_seq` in the store). The service acknowledges lines once they are stored
//! ([`ToKeeper::Ack`]); the keeper keeps every line not yet acknowledged, so a service that
//! stops or dies loses none: the next one says what it has stored ([`ToKeeper::Attach`]) and
//! gets the rest. A line that asks something of the service (a permission request) is pinned
//! until its answer goes back with [`ToKeeper::Stdin`]'s `unpin`, so a request stored but not
//! answered when the service died is asked again of the next one ([`Line::seen`]).

use serde::{Deserialize, Serialize};

use crate::protocol::framing::{Frame, MAX_LINE_BYTES};

/// The longest frame either side accepts: a whole line at the cap, with its header.
pub const MAX_FRAME: usize = MAX_LINE_BYTES + 64;

/// Which of the CLI's streams a line or an end belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

impl Stream {
    fn byte(self) -> u8 {
        match self {
            Stream::Stdout => 0,
            Stream::Stderr => 1,
        }
    }

    fn from_byte(b: u8) -> Result<Stream, WireError> {
        match b {
            0 => Ok(Stream::Stdout),
            1 => Ok(Stream::Stderr),
            other => Err(WireError(format!("unknown stream {other}"))),
        }
    }
}

/// One line of the CLI's output, numbered.
#[derive(Debug, PartialEq, Eq)]
pub struct Line {
    pub seq: u64,
    pub stream: Stream,
    pub frame: Frame,
    /// The service stored it already (its number is at most what [`ToKeeper::Attach`] said),
    /// but had not answered it, if it asks: read it for its request only.
    pub seen: bool,
}

/// The version of these frames. A service attaches only to keepers that speak its own: after
/// an upgrade that changes them, sessions kept by the old keepers are ended (`crashed`) and
/// resume on their next message.
pub const PROTOCOL: u32 = 1;

/// What the keeper knows of itself, sent first on every connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// [`PROTOCOL`], as the keeper speaks it.
    #[serde(default)]
    pub protocol: u32,
    /// The session whose CLI it keeps.
    pub session: String,
    pub keeper_pid: i32,
    /// The process it started (bubblewrap's launcher when sandboxed), its group's leader.
    pub cli_pid: i32,
    /// Its start time in clock ticks since boot, as `/proc/<pid>/stat` says.
    pub cli_started_at: Option<String>,
    /// The cgroup the CLI runs in (killed when the keeper dies), if any.
    pub cgroup: Option<String>,
    pub sandboxed: bool,
    /// The number of the first line it ever kept.
    pub first_seq: u64,
    /// Bytes of lines it holds now.
    pub buffered_bytes: u64,
}

/// How the CLI ended, as `waitpid` told the keeper (the raw status word).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitStatus(pub i32);

#[derive(Debug, PartialEq, Eq)]
pub enum FromKeeper {
    Hello(Hello),
    Line(Line),
    /// A stream of the CLI ended; every line of it before this has been sent.
    End {
        seq: u64,
        stream: Stream,
    },
    /// The CLI exited.
    Exit {
        seq: u64,
        status: WaitStatus,
    },
}

#[derive(Debug, PartialEq, Eq)]
pub enum ToKeeper {
    /// The first frame of a connection: lines up to `stored_through` are stored (each line
    /// after it is sent as new, the ones up to it only when unanswered).
    Attach { stored_through: u64 },
    /// A line for the CLI's stdin (a newline is added); `unpin`: the request it answers.
    Stdin { line: Vec<u8>, unpin: Option<u64> },
    /// Close the CLI's stdin once everything before is written (its cue to finish).
    CloseStdin,
    /// The line asks something: keep it until it is answered.
    Pin { seq: u64 },
    /// The request will get no answer (the CLI withdrew it).
    Unpin { seq: u64 },
    /// Every line up to `through` is stored: the keeper may forget them.
    Ack { through: u64 },
    /// The service recorded the CLI's end: the keeper may go (the service ends the cgroup).
    Release,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("keeper protocol: {0}")]
pub struct WireError(pub String);

mod tag {
    pub const HELLO: u8 = 1;
    pub const LINE: u8 = 2;
    pub const END: u8 = 3;
    pub const EXIT: u8 = 4;
    pub const ATTACH: u8 = 16;
    pub const STDIN: u8 = 17;
    pub const CLOSE_STDIN: u8 = 18;
    pub const PIN: u8 = 19;
    pub const UNPIN: u8 = 20;
    pub const ACK: u8 = 21;
    pub const RELEASE: u8 = 22;
}

/// Line flags.
const SEEN: u8 = 1;
const OVERSIZED: u8 = 2;

fn frame_header(out: &mut Vec<u8>, tag: u8, payload_len: usize) {
    // A frame's length always fits: lines are capped far below 4 GiB.
    out.extend_from_slice(&u32::try_from(payload_len + 1).unwrap_or(u32::MAX).to_le_bytes());
    out.push(tag);
}

impl FromKeeper {
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            FromKeeper::Hello(hello) => {
                let json = serde_json::to_vec(hello).unwrap_or_default();
                frame_header(out, tag::HELLO, json.len());
                out.extend_from_slice(&json);
            }
            FromKeeper::Line(line) => encode_line(line, out),
            FromKeeper::End { seq, stream } => {
                frame_header(out, tag::END, 9);
                out.extend_from_slice(&seq.to_le_bytes());
                out.push(stream.byte());
            }
            FromKeeper::Exit { seq, status } => {
                frame_header(out, tag::EXIT, 12);
                out.extend_from_slice(&seq.to_le_bytes());
                out.extend_from_slice(&status.0.to_le_bytes());
            }
        }
    }

    pub fn decode(tag: u8, payload: &[u8]) -> Result<FromKeeper, WireError> {
        let mut r = Reader(payload);
        Ok(match tag {
            tag::HELLO => FromKeeper::Hello(
                serde_json::from_slice(payload).map_err(|e| WireError(format!("a hello that is not JSON: {e}")))?,
            ),
            tag::LINE => {
                let seq = r.u64()?;
                let stream = Stream::from_byte(r.u8()?)?;
                let flags = r.u8()?;
                let frame = if flags & OVERSIZED != 0 {
                    Frame::Oversized { len: usize::try_from(r.u64()?).unwrap_or(usize::MAX) }
                } else {
                    Frame::Line(String::from_utf8_lossy(r.rest()).into_owned())
                };
                FromKeeper::Line(Line { seq, stream, frame, seen: flags & SEEN != 0 })
            }
            tag::END => FromKeeper::End { seq: r.u64()?, stream: Stream::from_byte(r.u8()?)? },
            tag::EXIT => FromKeeper::Exit { seq: r.u64()?, status: WaitStatus(r.i32()?) },
            other => return Err(WireError(format!("unknown frame {other} from a keeper"))),
        })
    }
}

impl FromKeeper {
    /// Decodes a whole frame the caller owns (its length prefix included): a line's text is
    /// taken out of it in place, so a 30 MiB line is never copied to be read.
    pub fn decode_owned(mut frame: Vec<u8>) -> Result<FromKeeper, WireError> {
        const LINE_HEADER: usize = 4 + 1 + 8 + 1 + 1;
        let plain_line = frame.len() >= LINE_HEADER && frame[4] == tag::LINE && frame[LINE_HEADER - 1] & OVERSIZED == 0;
        if !plain_line {
            let tag = *frame.get(4).ok_or_else(|| WireError("a frame cut short".to_string()))?;
            return FromKeeper::decode(tag, &frame[5..]);
        }
        let mut r = Reader(&frame[5..LINE_HEADER]);
        let (seq, stream, flags) = (r.u64()?, Stream::from_byte(r.u8()?)?, r.u8()?);
        frame.drain(..LINE_HEADER);
        let text = String::from_utf8(frame).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        Ok(FromKeeper::Line(Line { seq, stream, frame: Frame::Line(text), seen: flags & SEEN != 0 }))
    }
}

/// The length of the frame at the front of `buf` (its prefix included), once its prefix is there.
pub fn frame_len(buf: &[u8]) -> Option<usize> {
    let len = buf.get(..4)?;
    Some(4 + u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize)
}

/// A line's frame, written straight from its parts (the keeper's hot path: no copy).
pub fn encode_line_parts(seq: u64, stream: Stream, frame: &Frame, seen: bool, out: &mut Vec<u8>) {
    let flags = if seen { SEEN } else { 0 };
    match frame {
        Frame::Line(text) => {
            frame_header(out, tag::LINE, 10 + text.len());
            out.extend_from_slice(&seq.to_le_bytes());
            out.push(stream.byte());
            out.push(flags);
            out.extend_from_slice(text.as_bytes());
        }
        Frame::Oversized { len } => {
            frame_header(out, tag::LINE, 18);
            out.extend_from_slice(&seq.to_le_bytes());
            out.push(stream.byte());
            out.push(flags | OVERSIZED);
            out.extend_from_slice(&(*len as u64).to_le_bytes());
        }
    }
}

fn encode_line(line: &Line, out: &mut Vec<u8>) {
    encode_line_parts(line.seq, line.stream, &line.frame, line.seen, out);
}

impl ToKeeper {
    pub fn encode(&self, out: &mut Vec<u8>) {
        let number = |out: &mut Vec<u8>, tag: u8, n: u64| {
            frame_header(out, tag, 8);
            out.extend_from_slice(&n.to_le_bytes());
        };
        match self {
            ToKeeper::Attach { stored_through } => number(out, tag::ATTACH, *stored_through),
            ToKeeper::Stdin { line, unpin } => {
                frame_header(out, tag::STDIN, 8 + line.len());
                out.extend_from_slice(&unpin.unwrap_or(0).to_le_bytes());
                out.extend_from_slice(line);
            }
            ToKeeper::CloseStdin => frame_header(out, tag::CLOSE_STDIN, 0),
            ToKeeper::Pin { seq } => number(out, tag::PIN, *seq),
            ToKeeper::Unpin { seq } => number(out, tag::UNPIN, *seq),
            ToKeeper::Ack { through } => number(out, tag::ACK, *through),
            ToKeeper::Release => frame_header(out, tag::RELEASE, 0),
        }
    }

    pub fn decode(tag: u8, payload: &[u8]) -> Result<ToKeeper, WireError> {
        let mut r = Reader(payload);
        Ok(match tag {
            tag::ATTACH => ToKeeper::Attach { stored_through: r.u64()? },
            tag::STDIN => {
                let unpin = r.u64()?;
                ToKeeper::Stdin { unpin: (unpin != 0).then_some(unpin), line: r.rest().to_vec() }
            }
            tag::CLOSE_STDIN => ToKeeper::CloseStdin,
            tag::PIN => ToKeeper::Pin { seq: r.u64()? },
            tag::UNPIN => ToKeeper::Unpin { seq: r.u64()? },
            tag::ACK => ToKeeper::Ack { through: r.u64()? },
            tag::RELEASE => ToKeeper::Release,
            other => return Err(WireError(format!("unknown frame {other} from the service"))),
        })
    }
}

/// A whole frame at the front of a buffer: its tag, its payload, and how many bytes it took.
pub type Split<'a> = (u8, &'a [u8], usize);

/// Cuts whole frames off the front of `buf`: the first one; `None` until one is complete.
pub fn split_frame(buf: &[u8]) -> Result<Option<Split<'_>>, WireError> {
    let Some(len) = buf.get(..4) else { return Ok(None) };
    let len = u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize;
    if len == 0 || len > MAX_FRAME {
        return Err(WireError(format!("a frame of {len} bytes")));
    }
    match buf.get(4..4 + len) {
        Some(body) => Ok(Some((body[0], &body[1..], 4 + len))),
        None => Ok(None),
    }
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], WireError> {
        let (head, rest) = self.0.split_first_chunk::<N>().ok_or_else(|| WireError("a frame cut short".to_string()))?;
        self.0 = rest;
        Ok(*head)
    }

    fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.take::<1>()?[0])
    }

    fn u64(&mut self) -> Result<u64, WireError> {
        Ok(u64::from_le_bytes(self.take::<8>()?))
    }

    fn i32(&mut self) -> Result<i32, WireError> {
        Ok(i32::from_le_bytes(self.take::<4>()?))
    }

    fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip_from(frame: FromKeeper) {
        let mut bytes = Vec::new();
        frame.encode(&mut bytes);
        let (tag, payload, used) = split_frame(&bytes).expect("valid").expect("complete");
        assert_eq!(used, bytes.len());
        assert_eq!(FromKeeper::decode(tag, payload).expect("decodes"), frame);
    }

    fn round_trip_to(frame: ToKeeper) {
        let mut bytes = Vec::new();
        frame.encode(&mut bytes);
        let (tag, payload, used) = split_frame(&bytes).expect("valid").expect("complete");
        assert_eq!(used, bytes.len());
        assert_eq!(ToKeeper::decode(tag, payload).expect("decodes"), frame);
    }

    #[test]
    fn every_frame_reads_back_as_written() {
        round_trip_from(FromKeeper::Hello(Hello {
            protocol: PROTOCOL,
            session: "s".into(),
            keeper_pid: 7,
            cli_pid: 8,
            cli_started_at: Some("123".into()),
            cgroup: None,
            sandboxed: true,
            first_seq: 5,
            buffered_bytes: 9,
        }));
        round_trip_from(FromKeeper::Line(Line {
            seq: 3,
            stream: Stream::Stderr,
            frame: Frame::Line("é {\"a\":1}".into()),
            seen: true,
        }));
        round_trip_from(FromKeeper::Line(Line {
            seq: u64::MAX,
            stream: Stream::Stdout,
            frame: Frame::Oversized { len: 40 << 20 },
            seen: false,
        }));
        round_trip_from(FromKeeper::End { seq: 4, stream: Stream::Stdout });
        round_trip_from(FromKeeper::Exit { seq: 5, status: WaitStatus(9) });
        round_trip_to(ToKeeper::Attach { stored_through: 0 });
        round_trip_to(ToKeeper::Stdin { line: b"{}".to_vec(), unpin: Some(3) });
        round_trip_to(ToKeeper::Stdin { line: Vec::new(), unpin: None });
        round_trip_to(ToKeeper::CloseStdin);
        round_trip_to(ToKeeper::Pin { seq: 1 });
        round_trip_to(ToKeeper::Unpin { seq: 2 });
        round_trip_to(ToKeeper::Ack { through: 3 });
        round_trip_to(ToKeeper::Release);
    }

    #[test]
    fn an_owned_frame_reads_as_a_borrowed_one() {
        let frames = [
            FromKeeper::Line(Line {
                seq: 9,
                stream: Stream::Stdout,
                frame: Frame::Line("{\"a\": \"é\"}".into()),
                seen: true,
            }),
            FromKeeper::Line(Line { seq: 1, stream: Stream::Stderr, frame: Frame::Oversized { len: 5 }, seen: false }),
            FromKeeper::End { seq: 2, stream: Stream::Stdout },
        ];
        for frame in frames {
            let mut bytes = Vec::new();
            frame.encode(&mut bytes);
            assert_eq!(frame_len(&bytes), Some(bytes.len()));
            assert_eq!(FromKeeper::decode_owned(bytes).expect("decodes"), frame);
        }
        assert!(FromKeeper::decode_owned(vec![1, 0, 0]).is_err(), "a frame cut short");
    }

    #[test]
    fn partial_and_hostile_frames_are_told_apart() {
        let mut bytes = Vec::new();
        ToKeeper::Ack { through: 3 }.encode(&mut bytes);
        for cut in 0..bytes.len() {
            assert_eq!(split_frame(&bytes[..cut]).expect("valid so far"), None);
        }
        assert!(split_frame(&[0, 0, 0, 0]).is_err(), "an empty frame");
        assert!(split_frame(&u32::MAX.to_le_bytes()).is_err(), "a frame over the cap");
        assert!(ToKeeper::decode(tag::ACK, &[1, 2]).is_err(), "a number cut short");
        assert!(ToKeeper::decode(200, &[]).is_err(), "an unknown tag");
        assert!(FromKeeper::decode(tag::LINE, &[0; 8]).is_err(), "a line without its stream");
    }
}
