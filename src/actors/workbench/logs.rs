//! Background processes' logs on disk: one file per stream (`<id>.stdout`, `<id>.stderr`) in
//! the `logs` folder of the `process_dir` setting, each bounded by `process_log_bytes`. Byte
//! offsets into a file are the positions clients page and resume by. Under the `at_rest`
//! redaction (the default) the files are written without secrets; under `in_flight` they hold
//! the output as written and what is read of them is redacted. Reads run on the blocking pool.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::domain::ids::ProcessId;

/// One of a process's two output streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Stream {
    Stdout,
    Stderr,
}

impl Stream {
    pub const fn as_str(self) -> &'static str {
        match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        }
    }
}

/// How far a running process's logs are written, as its pump publishes it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogMark {
    pub stdout: u64,
    pub stderr: u64,
    /// The process has ended and its logs are complete.
    pub ended: bool,
}

impl LogMark {
    pub fn of(&self, stream: Stream) -> u64 {
        match stream {
            Stream::Stdout => self.stdout,
            Stream::Stderr => self.stderr,
        }
    }
}

pub fn logs_dir(root: &Path) -> PathBuf {
    root.join("logs")
}

pub fn log_path(root: &Path, id: &ProcessId, stream: Stream) -> PathBuf {
    logs_dir(root).join(format!("{id}.{}", stream.as_str()))
}

/// Removes a process's logs (missing ones are fine). Blocking.
pub fn remove(root: &Path, id: &ProcessId) {
    for stream in [Stream::Stdout, Stream::Stderr] {
        let _ = std::fs::remove_file(log_path(root, id, stream));
    }
}

/// A page of a log: up to `limit` bytes from `offset`, and the file's size then. A page that
/// stops short of the log's end stops at a line end when it holds one, and never inside a UTF-8
/// character unless the character is longer than the page (so pages read in turn rejoin into
/// the same text). Blocking.
pub fn read_page(path: &Path, offset: u64, limit: usize) -> std::io::Result<(Vec<u8>, u64)> {
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), 0)),
        Err(e) => return Err(e),
    };
    let size = file.metadata()?.len();
    if offset >= size {
        return Ok((Vec::new(), size));
    }
    file.seek(SeekFrom::Start(offset))?;
    let want = limit.min((size - offset) as usize);
    let mut buf = vec![0; want];
    let mut got = 0;
    while got < want {
        match file.read(&mut buf[got..])? {
            0 => break,
            n => got += n,
        }
    }
    buf.truncate(got);
    let keep = utf8_prefix(&buf);
    if keep > 0 {
        buf.truncate(keep);
    }
    // Cut short of the log's end: at the page's last line end when it has one, so a page read
    // alone (and redacted alone, under `in_flight`) holds its lines' secrets whole.
    if offset + (buf.len() as u64) < size {
        if let Some(end) = buf.iter().rposition(|&b| b == b'\n') {
            buf.truncate(end + 1);
        }
    }
    Ok((buf, size))
}

/// The length of `bytes` without an incomplete UTF-8 character at its end.
pub fn utf8_prefix(bytes: &[u8]) -> usize {
    let len = bytes.len();
    // A character is at most 4 bytes: look at the last 3 for the start of a cut one.
    for back in 1..=3.min(len) {
        let b = bytes[len - back];
        if b & 0b1100_0000 == 0b1000_0000 {
            continue; // a continuation byte: keep looking for its lead
        }
        let width = match b {
            0x00..=0x7f => 1,
            0xc0..=0xdf => 2,
            0xe0..=0xef => 3,
            0xf0..=0xf7 => 4,
            _ => 1,
        };
        return if width > back { len - back } else { len };
    }
    len
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_never_cut_a_character_and_rejoin() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("log");
        let text = "aé€😀b".repeat(50);
        std::fs::write(&path, &text).expect("write");
        let (mut offset, mut joined) = (0u64, String::new());
        for _ in 0..1000 {
            let (page, size) = read_page(&path, offset, 5).expect("page");
            assert_eq!(size, text.len() as u64);
            if page.is_empty() {
                break;
            }
            offset += page.len() as u64;
            joined.push_str(std::str::from_utf8(&page).expect("whole characters"));
        }
        assert_eq!(joined, text);
        assert_eq!(read_page(&dir.path().join("none"), 0, 10).expect("missing is empty"), (Vec::new(), 0));
    }

    #[test]
    fn a_page_short_of_the_end_stops_at_a_line_end() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("log");
        std::fs::write(&path, "one\ntwo\nthree").expect("write");
        assert_eq!(read_page(&path, 0, 6).expect("page").0, b"one\n");
        assert_eq!(read_page(&path, 4, 100).expect("page").0, b"two\nthree", "the end needs no line end");
        assert_eq!(read_page(&path, 8, 3).expect("page").0, b"thr", "a page without a line end");
    }

    #[test]
    fn utf8_prefix_drops_only_a_cut_character() {
        assert_eq!(utf8_prefix(b"abc"), 3);
        assert_eq!(utf8_prefix("é".as_bytes()), 2);
        assert_eq!(utf8_prefix(&"é".as_bytes()[..1]), 0);
        assert_eq!(utf8_prefix(&"😀".as_bytes()[..3]), 0);
        assert_eq!(utf8_prefix(&[b'a', 0xff]), 2);
    }
}
