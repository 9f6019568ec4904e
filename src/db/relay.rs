//! Cluster mode's live events across nodes: the writer that stores a batch of a session's
//! numbered lines and events sends, in the same transaction, a PostgreSQL `NOTIFY` naming the ranges it stored
//! (`conduit_events`: its node, then one `session from to` line per session). The other nodes
//! listen, read those rows back and publish them to their own subscribers. Ids travel, payloads
//! come from the store: a notice is small whatever the events weigh.

use diesel::prelude::*;
use diesel::sql_types::Text;

use super::messages::{self, StoredEvent};
use super::{DbConnection, StoreError};

pub const CHANNEL: &str = "conduit_events";
/// PostgreSQL refuses a notice payload of 8000 bytes or more.
const MAX_PAYLOAD: usize = 7_900;

/// A stored range of one session's events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Range {
    pub session_id: String,
    pub from: i64,
    pub to: i64,
}

/// Sends the notices of the stream numbers `numbered` (session, seq; in queue order), as
/// `node`. Nothing on SQLite.
pub fn notify_events(conn: &mut DbConnection, node: &str, numbered: &[(&str, i64)]) -> Result<(), StoreError> {
    if numbered.is_empty() || !matches!(conn, DbConnection::Pg(_)) {
        return Ok(());
    }
    for payload in payloads(node, &ranges(numbered)) {
        diesel::sql_query("SELECT pg_notify($1, $2)")
            .bind::<Text, _>(CHANNEL)
            .bind::<Text, _>(payload)
            .execute(conn)?;
    }
    Ok(())
}

/// Each session's stored range, sessions in the order they first appear.
fn ranges(numbered: &[(&str, i64)]) -> Vec<Range> {
    let mut out: Vec<Range> = Vec::new();
    for (session, seq) in numbered {
        match out.iter_mut().find(|r| r.session_id == *session) {
            Some(r) => (r.from, r.to) = (r.from.min(*seq), r.to.max(*seq)),
            None => out.push(Range { session_id: session.to_string(), from: *seq, to: *seq }),
        }
    }
    out
}

fn payloads(node: &str, ranges: &[Range]) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = format!("{node}\n");
    for r in ranges {
        let line = format!("{} {} {}\n", r.session_id, r.from, r.to);
        if current.len() + line.len() > MAX_PAYLOAD {
            out.push(std::mem::replace(&mut current, format!("{node}\n")));
        }
        current.push_str(&line);
    }
    out.push(current);
    out
}

/// A notice read back: the node that stored the events, and their ranges. `None` when it is
/// not one of ours.
pub fn parse(payload: &str) -> Option<(String, Vec<Range>)> {
    let mut lines = payload.lines();
    let node = lines.next()?.to_string();
    let ranges = lines
        .map(|line| {
            let mut parts = line.split(' ');
            let (session_id, from, to) = (parts.next()?, parts.next()?.parse().ok()?, parts.next()?.parse().ok()?);
            Some(Range { session_id: session_id.to_string(), from, to })
        })
        .collect::<Option<Vec<_>>>()?;
    Some((node, ranges))
}

/// The events of `range`, in order, lines and other events merged as the streams show them.
pub fn read(conn: &mut DbConnection, range: &Range) -> Result<Vec<StoredEvent>, StoreError> {
    let (from, until) = (range.from.max(0) as u64, range.to.max(0) as u64 + 1);
    messages::events_between(conn, &range.session_id, from, until, i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_name_each_sessions_range_and_read_back() {
        let numbered = [("s1", 4), ("s2", 1), ("s1", 5), ("s1", 6)];
        let payloads = payloads("node-a", &ranges(&numbered));
        assert_eq!(payloads, ["node-a\ns1 4 6\ns2 1 1\n"]);
        let (node, read) = parse(&payloads[0]).expect("parses");
        assert_eq!(node, "node-a");
        assert_eq!(
            read,
            [Range { session_id: "s1".into(), from: 4, to: 6 }, Range { session_id: "s2".into(), from: 1, to: 1 }]
        );
        assert!(parse("node\nnot a range\n").is_none());
    }

    #[test]
    fn long_notices_are_split_under_the_server_limit() {
        let sessions: Vec<String> = (0..500).map(|i| format!("{i:036}")).collect();
        let numbered: Vec<(&str, i64)> = sessions.iter().map(|s| (s.as_str(), 1)).collect();
        let payloads = payloads("n", &ranges(&numbered));
        assert!(payloads.len() > 1);
        assert!(payloads.iter().all(|p| p.len() <= MAX_PAYLOAD && p.starts_with("n\n")));
        let total: usize = payloads.iter().map(|p| parse(p).expect("parses").1.len()).sum();
        assert_eq!(total, 500);
    }
}
