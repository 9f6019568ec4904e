//! A terminal's recent output, bounded: what a client that connects (or reconnects) is sent
//! first, so its screen repaints.

use std::collections::VecDeque;

pub struct Scrollback {
    bytes: VecDeque<u8>,
    capacity: usize,
    /// Whether older output was dropped to stay within `capacity`.
    cut: bool,
}

impl Scrollback {
    pub fn new(capacity: usize) -> Self {
        Scrollback { bytes: VecDeque::new(), capacity: capacity.max(1), cut: false }
    }

    /// Keeps `chunk`, dropping the oldest bytes beyond the capacity.
    pub fn push(&mut self, chunk: &[u8]) {
        let chunk = if chunk.len() > self.capacity {
            self.cut = true;
            self.bytes.clear();
            &chunk[chunk.len() - self.capacity..]
        } else {
            chunk
        };
        let over = (self.bytes.len() + chunk.len()).saturating_sub(self.capacity);
        if over > 0 {
            self.cut = true;
            self.bytes.drain(..over);
        }
        self.bytes.extend(chunk);
    }

    /// What is kept, oldest first. Once older output was dropped, it starts after the first
    /// line break (when there is one), so a repaint does not begin in the middle of a line or of
    /// an escape sequence.
    pub fn snapshot(&self) -> Vec<u8> {
        let (a, b) = self.bytes.as_slices();
        let mut all = Vec::with_capacity(self.bytes.len());
        all.extend_from_slice(a);
        all.extend_from_slice(b);
        if self.cut {
            if let Some(newline) = all.iter().position(|&b| b == b'\n') {
                all.drain(..=newline);
            }
        }
        all
    }

    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::Scrollback;

    #[test]
    fn keeps_everything_within_its_capacity() {
        let mut s = Scrollback::new(16);
        s.push(b"hello ");
        s.push(b"world");
        assert_eq!(s.snapshot(), b"hello world");
        assert_eq!(s.len(), 11);
    }

    #[test]
    fn drops_the_oldest_bytes_and_starts_at_a_line() {
        let mut s = Scrollback::new(10);
        s.push(b"one\ntwo\n");
        s.push(b"three\n");
        assert_eq!(s.len(), 10);
        // Kept "two\nthree\n" minus the cut's partial first line.
        assert_eq!(s.snapshot(), b"three\n");
        let mut s = Scrollback::new(4);
        s.push(b"abcdefgh");
        assert_eq!(s.snapshot(), b"efgh", "no line break: everything kept is sent");
    }

    #[test]
    fn a_chunk_larger_than_the_capacity_keeps_its_end() {
        let mut s = Scrollback::new(3);
        s.push(b"x");
        s.push(b"0123456\n78");
        assert_eq!(s.len(), 3);
        assert_eq!(s.snapshot(), b"78");
    }
}
