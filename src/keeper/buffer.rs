//! What a keeper holds of its CLI's output: every line the service has not acknowledged as
//! stored, the requests it has not answered, and how the streams ended. Bounded in bytes: when
//! full, the keeper stops reading the CLI (its pipe fills and it waits) rather than drop a line.

use std::collections::{BTreeMap, VecDeque};

use super::wire::{encode_line_parts, FromKeeper, Stream, WaitStatus};
use crate::protocol::framing::Frame;

/// What the CLI did, numbered.
#[derive(Debug)]
enum Record {
    Line { stream: Stream, frame: Frame, pinned: bool, answered: bool },
    End(Stream),
    Exit(WaitStatus),
}

fn frame_bytes(frame: &Frame) -> usize {
    match frame {
        Frame::Line(text) => text.len(),
        Frame::Oversized { .. } => 0,
    }
}

#[derive(Debug)]
pub struct Buffer {
    /// Lines not yet acknowledged, and every end (kept for each new connection), by number.
    records: VecDeque<(u64, Record)>,
    /// Acknowledged lines that ask and are not answered yet.
    pins: BTreeMap<u64, Frame>,
    /// Bytes of the lines held (both kinds).
    bytes: usize,
    cap: usize,
    next_seq: u64,
    /// The last number sent on the current connection (`None`: nobody attached).
    sent_through: Option<u64>,
}

impl Buffer {
    pub fn new(first_seq: u64, cap: usize) -> Buffer {
        Buffer {
            records: VecDeque::new(),
            pins: BTreeMap::new(),
            bytes: 0,
            cap: cap.max(1),
            next_seq: first_seq.max(1),
            sent_through: None,
        }
    }

    /// True while more output may be read from the CLI.
    pub fn has_room(&self) -> bool {
        self.bytes < self.cap
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    fn push(&mut self, record: Record) {
        if let Record::Line { frame, .. } = &record {
            self.bytes += frame_bytes(frame);
        }
        self.records.push_back((self.next_seq, record));
        self.next_seq += 1;
    }

    pub fn line(&mut self, stream: Stream, frame: Frame) {
        self.push(Record::Line { stream, frame, pinned: false, answered: false });
    }

    pub fn end(&mut self, stream: Stream) {
        self.push(Record::End(stream));
    }

    pub fn exit(&mut self, status: WaitStatus) {
        self.push(Record::Exit(status));
    }

    /// A new connection said what it has stored: writes what it must hear first, in order
    /// (the requests it stored but did not answer, marked seen, and every end up to there);
    /// then [`Buffer::write_next`] gives the rest.
    pub fn attach(&mut self, stored_through: u64, out: &mut Vec<u8>) {
        for (&seq, frame) in &self.pins {
            encode_line_parts(seq, Stream::Stdout, frame, true, out);
        }
        for (seq, record) in self.records.iter().take_while(|(seq, _)| *seq <= stored_through) {
            match record {
                Record::Line { stream: Stream::Stdout, frame, answered: false, .. } => {
                    encode_line_parts(*seq, Stream::Stdout, frame, true, out)
                }
                Record::Line { .. } => {}
                Record::End(stream) => FromKeeper::End { seq: *seq, stream: *stream }.encode(out),
                Record::Exit(status) => FromKeeper::Exit { seq: *seq, status: *status }.encode(out),
            }
        }
        self.sent_through = Some(stored_through);
    }

    /// The connection is gone: nothing more is sent until the next one attaches.
    pub fn detach(&mut self) {
        self.sent_through = None;
    }

    /// Writes the next record the attached service has not heard yet; false when there is none.
    pub fn write_next(&mut self, out: &mut Vec<u8>) -> bool {
        let Some(through) = self.sent_through else { return false };
        let start = self.records.partition_point(|(seq, _)| *seq <= through);
        let Some((seq, record)) = self.records.get(start) else { return false };
        let seq = *seq;
        match record {
            Record::Line { stream, frame, .. } => encode_line_parts(seq, *stream, frame, false, out),
            Record::End(stream) => FromKeeper::End { seq, stream: *stream }.encode(out),
            Record::Exit(status) => FromKeeper::Exit { seq, status: *status }.encode(out),
        }
        self.sent_through = Some(seq);
        true
    }

    /// Whether anything is waiting to be sent to an attached service.
    pub fn has_unsent(&self) -> bool {
        match self.sent_through {
            Some(through) => self.records.back().is_some_and(|(seq, _)| *seq > through),
            None => false,
        }
    }

    /// Lines up to `through` are stored: forget them (a pinned one moves to the pins; ends stay).
    pub fn ack(&mut self, through: u64) {
        let mut ends = Vec::new();
        while self.records.front().is_some_and(|(seq, _)| *seq <= through) {
            let Some((seq, record)) = self.records.pop_front() else { break };
            match record {
                Record::Line { frame, pinned: true, answered: false, .. } => {
                    self.pins.insert(seq, frame);
                }
                Record::Line { frame, .. } => self.bytes -= frame_bytes(&frame),
                end => ends.push((seq, end)),
            }
        }
        for end in ends.into_iter().rev() {
            self.records.push_front(end);
        }
    }

    /// The line `seq` asks: keep it until it is answered.
    pub fn pin(&mut self, seq: u64) {
        if let Some(Record::Line { pinned, .. }) = self.find(seq) {
            *pinned = true;
        }
    }

    /// The request of line `seq` was answered (or withdrawn).
    pub fn unpin(&mut self, seq: u64) {
        if let Some(frame) = self.pins.remove(&seq) {
            self.bytes -= frame_bytes(&frame);
        }
        if let Some(Record::Line { answered, .. }) = self.find(seq) {
            *answered = true;
        }
    }

    fn find(&mut self, seq: u64) -> Option<&mut Record> {
        let at = self.records.binary_search_by_key(&seq, |(s, _)| *s).ok()?;
        self.records.get_mut(at).map(|(_, r)| r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keeper::wire::{split_frame, Line};

    fn frames(bytes: &[u8]) -> Vec<FromKeeper> {
        let mut got = Vec::new();
        let mut rest = bytes;
        while let Some((tag, payload, used)) = split_frame(rest).expect("valid") {
            got.push(FromKeeper::decode(tag, payload).expect("decodes"));
            rest = &rest[used..];
        }
        assert!(rest.is_empty());
        got
    }

    fn line(seq: u64, stream: Stream, text: &str, seen: bool) -> FromKeeper {
        FromKeeper::Line(Line { seq, stream, frame: Frame::Line(text.into()), seen })
    }

    fn drain(buffer: &mut Buffer) -> Vec<FromKeeper> {
        let mut out = Vec::new();
        while buffer.write_next(&mut out) {}
        frames(&out)
    }

    #[test]
    fn a_new_service_gets_what_it_did_not_store_and_no_line_twice() {
        let mut b = Buffer::new(10, 1 << 20);
        b.line(Stream::Stdout, Frame::Line("a".into())); // 10
        b.line(Stream::Stderr, Frame::Line("b".into())); // 11
        b.line(Stream::Stdout, Frame::Line("c".into())); // 12
        let mut out = Vec::new();
        b.attach(9, &mut out);
        assert!(out.is_empty());
        assert_eq!(drain(&mut b).len(), 3);
        // Stored through 11 when the service died; 12 was read but not stored.
        b.ack(11);
        b.detach();
        b.line(Stream::Stdout, Frame::Line("d".into())); // 13, written while nobody was there
        assert!(!b.has_unsent());
        let mut out = Vec::new();
        b.attach(11, &mut out);
        assert!(out.is_empty());
        assert_eq!(drain(&mut b), vec![line(12, Stream::Stdout, "c", false), line(13, Stream::Stdout, "d", false)]);
        assert_eq!(b.bytes(), 2);
    }

    #[test]
    fn a_stored_request_without_its_answer_is_asked_again() {
        let mut b = Buffer::new(1, 1 << 20);
        b.line(Stream::Stdout, Frame::Line("ask".into())); // 1
        b.line(Stream::Stdout, Frame::Line("ask too".into())); // 2
        b.line(Stream::Stdout, Frame::Line("answered".into())); // 3
        b.line(Stream::Stdout, Frame::Line("plain".into())); // 4
        b.attach(0, &mut Vec::new());
        drain(&mut b);
        b.pin(1);
        b.pin(3);
        b.unpin(3);
        // 1 is stored (and pinned); 2..=4 stored too, but their acknowledgement was lost.
        b.ack(1);
        b.detach();
        let mut out = Vec::new();
        b.attach(4, &mut out);
        assert_eq!(
            frames(&out),
            vec![
                line(1, Stream::Stdout, "ask", true),
                line(2, Stream::Stdout, "ask too", true),
                line(4, Stream::Stdout, "plain", true),
            ]
        );
        assert!(drain(&mut b).is_empty());
        b.unpin(1);
        b.ack(4);
        assert_eq!(b.bytes(), 0);
    }

    #[test]
    fn ends_are_told_to_every_connection_and_the_bound_holds_lines_back() {
        let mut b = Buffer::new(1, 4);
        b.line(Stream::Stdout, Frame::Line("abc".into()));
        assert!(b.has_room());
        b.line(Stream::Stderr, Frame::Line("de".into()));
        assert!(!b.has_room());
        b.end(Stream::Stdout);
        b.exit(WaitStatus(0));
        b.attach(0, &mut Vec::new());
        assert_eq!(drain(&mut b).len(), 4);
        b.ack(4);
        assert!(b.has_room());
        b.detach();
        let mut out = Vec::new();
        b.attach(4, &mut out);
        assert_eq!(
            frames(&out),
            vec![
                FromKeeper::End { seq: 3, stream: Stream::Stdout },
                FromKeeper::Exit { seq: 4, status: WaitStatus(0) }
            ]
        );
    }
}
