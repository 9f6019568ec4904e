//! NDJSON framing: bytes in, complete lines out.
//!
//! Handles lines split across reads, `\r\n`, a last line without a newline (call
//! [`LineFramer::finish`] at EOF), and lines longer than [`MAX_LINE_BYTES`]: those are dropped
//! as they stream in (the buffer never grows past the cap) and reported as
//! [`Frame::Oversized`] with their full length, so nothing disappears silently.

/// The longest line kept: 32 MiB. Real CLI lines can exceed 1 MiB (large tool results).
pub const MAX_LINE_BYTES: usize = 32 * 1024 * 1024;

#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    Line(String),
    /// A line over the cap was discarded; `len` is how long it was.
    Oversized {
        len: usize,
    },
}

#[derive(Debug)]
pub struct LineFramer {
    buf: Vec<u8>,
    max: usize,
    /// Bytes of the current line already discarded because it passed the cap.
    skipping: Option<usize>,
}

impl Default for LineFramer {
    fn default() -> Self {
        Self::new(MAX_LINE_BYTES)
    }
}

impl LineFramer {
    pub fn new(max: usize) -> Self {
        LineFramer { buf: Vec::new(), max, skipping: None }
    }

    /// Feeds a chunk; appends every line it completes to `out`.
    pub fn push(&mut self, mut chunk: &[u8], out: &mut Vec<Frame>) {
        while !chunk.is_empty() {
            match chunk.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    self.take(&chunk[..i], true, out);
                    chunk = &chunk[i + 1..];
                }
                None => {
                    self.take(chunk, false, out);
                    chunk = &[];
                }
            }
        }
    }

    /// End of stream: a last line without a newline is still a line.
    pub fn finish(&mut self, out: &mut Vec<Frame>) {
        if self.skipping.is_some() || !self.buf.is_empty() {
            self.take(&[], true, out);
        }
    }

    fn take(&mut self, part: &[u8], line_ends: bool, out: &mut Vec<Frame>) {
        if let Some(skipped) = self.skipping.as_mut() {
            *skipped += part.len();
        } else if self.buf.len() + part.len() > self.max {
            self.skipping = Some(self.buf.len() + part.len());
            self.buf = Vec::new();
        } else {
            self.buf.extend_from_slice(part);
        }
        if !line_ends {
            return;
        }
        if let Some(len) = self.skipping.take() {
            out.push(Frame::Oversized { len });
            return;
        }
        let mut line = std::mem::take(&mut self.buf);
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let text = match String::from_utf8(line) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        };
        out.push(Frame::Line(text));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(framer: &mut LineFramer, chunks: &[&[u8]]) -> Vec<Frame> {
        let mut out = Vec::new();
        for c in chunks {
            framer.push(c, &mut out);
        }
        framer.finish(&mut out);
        out
    }

    fn l(s: &str) -> Frame {
        Frame::Line(s.to_string())
    }

    #[test]
    fn splits_joins_and_trims_carriage_returns() {
        let mut f = LineFramer::default();
        assert_eq!(
            lines(&mut f, &[b"{\"a\":1}\n{\"b\"", b":2}\r\n\n", b"{\"c\":3}"]),
            vec![l("{\"a\":1}"), l("{\"b\":2}"), l("{\"c\":3}")]
        );
    }

    #[test]
    fn one_byte_at_a_time() {
        let mut f = LineFramer::default();
        let text = b"first\r\nsecond\nthird";
        let chunks: Vec<&[u8]> = text.chunks(1).collect();
        assert_eq!(lines(&mut f, &chunks), vec![l("first"), l("second"), l("third")]);
    }

    #[test]
    fn oversized_lines_are_reported_and_never_buffered_whole() {
        let mut f = LineFramer::new(10);
        let mut out = Vec::new();
        f.push(b"short\n0123456789", &mut out);
        f.push(b"ABCDEFGHIJ", &mut out);
        assert!(f.buf.len() <= 10, "buffer stays within the cap");
        f.push(b"XYZ\nafter\n", &mut out);
        assert_eq!(out, vec![l("short"), Frame::Oversized { len: 23 }, l("after")]);
    }

    #[test]
    fn a_line_exactly_at_the_cap_is_kept() {
        let mut f = LineFramer::new(4);
        assert_eq!(lines(&mut f, &[b"abcd\nabcde\n"]), vec![l("abcd"), Frame::Oversized { len: 5 }]);
    }

    #[test]
    fn invalid_utf8_is_kept_lossily() {
        let mut f = LineFramer::default();
        assert_eq!(lines(&mut f, &[b"a\xffb\n"]), vec![l("a\u{fffd}b")]);
    }

    #[test]
    fn an_oversized_last_line_at_eof_is_reported() {
        let mut f = LineFramer::new(3);
        assert_eq!(lines(&mut f, &[b"abcdef"]), vec![Frame::Oversized { len: 6 }]);
    }
}
