//! A command's output cut where a secret cannot be: at line ends.
//!
//! Output is redacted piece by piece (each piece of a stream, each chunk stored in a log), and a
//! secret cut in two between pieces is recognized in neither half. A pipe's reads end wherever
//! the writer's writes and the pipe's buffer happened to, so pieces are re-cut here: what ends
//! a line goes on, the unfinished line after it is held until its end comes. A private key's
//! block (`-----BEGIN ...`, several lines) is held whole until its `-----END`.
//!
//! What is held is bounded in size and in time: past [`MAX_HOLD`] bytes without a line end
//! the piece is cut at its last space (a secret holds none), and the pipe's watcher sends what
//! has been held for [`HOLD_FOR`] (a prompt without a newline is seen; a program does not stop
//! for that long in the middle of a key).

use std::time::Duration;

use actix_web::web::Bytes;

use super::logs::utf8_prefix;

/// The most bytes held back waiting for a line's end (or a key block's).
pub const MAX_HOLD: usize = 16 * 1024;
/// The longest a held piece waits before it goes on unfinished.
pub const HOLD_FOR: Duration = Duration::from_millis(100);

const KEY_BEGIN: &[u8] = b"-----BEGIN ";
const KEY_END: &[u8] = b"-----END ";

/// One stream's output being re-cut at line ends.
#[derive(Debug, Default)]
pub struct Aligner {
    held: Vec<u8>,
}

impl Aligner {
    /// Takes `data`; answers what of it (and of what was held) can go on now, if anything.
    pub fn push(&mut self, data: &[u8]) -> Option<Bytes> {
        self.held.extend_from_slice(data);
        let cut = cut_point(&self.held);
        if cut == 0 {
            return None;
        }
        let rest = self.held.split_off(cut);
        Some(Bytes::from(std::mem::replace(&mut self.held, rest)))
    }

    /// Everything held, unfinished or not (the stream ended, or it waited long enough).
    pub fn take(&mut self) -> Option<Bytes> {
        (!self.held.is_empty()).then(|| Bytes::from(std::mem::take(&mut self.held)))
    }

    pub fn is_holding(&self) -> bool {
        !self.held.is_empty()
    }
}

/// Where `buf` can be cut: after its last line end, or before a key block still open, or (a
/// tail too long to hold) after its last space, else before its last cut character.
fn cut_point(buf: &[u8]) -> usize {
    let mut cut = buf.iter().rposition(|&b| b == b'\n' || b == b'\r').map_or(0, |i| i + 1);
    if let Some(begin) = open_key_block(&buf[..cut]) {
        if buf.len() - begin <= MAX_HOLD {
            cut = begin;
        }
    }
    if buf.len() - cut <= MAX_HOLD {
        return cut;
    }
    let tail = &buf[cut..];
    match tail.iter().rposition(|&b| b == b' ' || b == b'\t') {
        Some(space) if tail.len() - (space + 1) <= MAX_HOLD => cut + space + 1,
        // No room to hold it whole: all of it goes, but a character cut at its end.
        _ => cut + utf8_prefix(tail),
    }
}

/// Where the line of a key block's start is, when `done` (whole lines) opens one and does not
/// close it.
fn open_key_block(done: &[u8]) -> Option<usize> {
    let begin = memchr::memmem::rfind(done, KEY_BEGIN)?;
    if memchr::memmem::find(&done[begin..], KEY_END).is_some() {
        return None;
    }
    Some(done[..begin].iter().rposition(|&b| b == b'\n' || b == b'\r').map_or(0, |i| i + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(chunks: &[&[u8]]) -> Vec<Vec<u8>> {
        let mut a = Aligner::default();
        let mut out: Vec<Vec<u8>> = chunks.iter().filter_map(|c| a.push(c)).map(|b| b.to_vec()).collect();
        out.extend(a.take().map(|b| b.to_vec()));
        out
    }

    #[test]
    fn pieces_end_at_line_ends_and_rejoin() {
        let got = pieces(&[b"one\ntw", b"o\nthr", b"ee"]);
        assert_eq!(got, vec![b"one\n".to_vec(), b"two\n".to_vec(), b"three".to_vec()]);
        assert_eq!(pieces(&[b"50%\r", b"100%\r"]), vec![b"50%\r".to_vec(), b"100%\r".to_vec()], "\\r ends a line");
        assert!(pieces(&[]).is_empty());
    }

    #[test]
    fn a_secret_cut_between_reads_arrives_whole() {
        let token = format!("ghp_{}", "aB3".repeat(12));
        let line = format!("the token is {token}\nnext");
        let (a, b) = line.as_bytes().split_at(20);
        let got = pieces(&[a, b]);
        let first = String::from_utf8(got[0].clone()).expect("utf8");
        assert!(first.contains(&token), "{first}");
        let mut redacted = first.clone();
        assert!(crate::secrets::scrub_text(&mut redacted), "recognized once whole: {redacted}");
    }

    #[test]
    fn a_key_block_is_held_until_its_end() {
        let begin = ["-----BEGIN ", "RSA PRIVATE KEY-----\n"].concat();
        let end = ["-----END ", "RSA PRIVATE KEY-----\n"].concat();
        let mut a = Aligner::default();
        assert_eq!(a.push(b"before\n").as_deref(), Some(&b"before\n"[..]));
        assert_eq!(a.push(format!("{begin}AAAA\n").as_bytes()), None, "the block is open");
        assert_eq!(a.push(b"BBBB\n"), None);
        let whole = a.push(format!("{end}after").as_bytes()).expect("the block closed");
        assert_eq!(whole, format!("{begin}AAAA\nBBBB\n{end}").as_bytes());
        assert_eq!(a.take().as_deref(), Some(&b"after"[..]));
    }

    #[test]
    fn holding_is_bounded() {
        // A line longer than the hold, with spaces: cut after its last one.
        let long = format!("{} tail", "word ".repeat(MAX_HOLD / 4));
        let mut a = Aligner::default();
        let out = a.push(long.as_bytes()).expect("too long to hold");
        assert!(out.ends_with(b" "), "cut at a space");
        assert_eq!(a.take().as_deref(), Some(&b"tail"[..]));
        // No space at all: everything goes but a character cut at the end.
        let mut bytes = "x".repeat(MAX_HOLD + 10).into_bytes();
        bytes.extend_from_slice(&"é".as_bytes()[..1]);
        let mut a = Aligner::default();
        assert_eq!(a.push(&bytes).map(|b| b.len()), Some(MAX_HOLD + 10));
        assert!(a.is_holding());
        // A key block too long to hold goes on as lines.
        let begin = ["-----BEGIN ", "PRIVATE KEY-----\n"].concat();
        let mut a = Aligner::default();
        let block = format!("{begin}{}", "A".repeat(64).repeat(300).replace("AAAAAAAA", "AAAAAAA\n"));
        assert!(a.push(block.as_bytes()).is_some(), "over the hold");
    }
}
