//! The keeper on its own (`conduit keeper`, through the service's side of its socket, with a
//! shell as the CLI): lines numbered from where the session left off, both streams; stdin
//! written through; a second connection gets what the first did not store and nothing it did;
//! and a keeper killed takes its CLI with it (here without a cgroup: its guardian kills the
//! process group).

use std::sync::Arc;
use std::time::Duration;

use conduit::keeper::link::{self, Connection, Durable};
use conduit::keeper::spec::Spec;
use conduit::keeper::wire::Stream;
use conduit::protocol::framing::Frame;
use conduit::transport::{CliOutput, OutLine};
use futures_util::StreamExt;

use crate::support::procs::{alive, gone_within};

/// Kills what the test started, however it ends (the keeper's guardian then kills the CLI's
/// group; the CLI is killed too, in case the guardian was not there yet).
struct Cleanup(Vec<i32>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        crate::support::procs::kill_all(&self.0);
    }
}

/// Nothing is ever stored: every line stays with the keeper.
fn never() -> Durable {
    Arc::new(|| Box::pin(async { false }))
}

fn spec(dir: &std::path::Path, script: &str) -> Spec {
    Spec {
        session: "keeper-test".to_string(),
        program: "/bin/sh".to_string(),
        args: vec!["-c".to_string(), script.to_string()],
        cwd: dir.display().to_string(),
        env: vec![("PATH".to_string(), std::env::var("PATH").unwrap_or_default())],
        join: Vec::new(),
        cgroup: None,
        keeper_cgroup: None,
        socket: dir.join("k.sock"),
        buffer_bytes: 1 << 20,
        first_seq: 5,
        sandboxed: false,
        orphan_ms: 0,
    }
}

/// The next numbered line (skipping nothing else: there is nothing else yet).
async fn next_line(output: &mut (impl futures_util::Stream<Item = CliOutput> + Unpin)) -> (u64, Stream, String) {
    match tokio::time::timeout(Duration::from_secs(10), output.next()).await {
        Ok(Some(CliOutput::Numbered { seq, stream, frame: Frame::Line(line) })) => (seq, stream, line),
        other => panic!("expected a numbered line, got {other:?}"),
    }
}

#[actix_web::test]
async fn a_keeper_numbers_keeps_and_hands_over_its_cli_s_lines() {
    let dir = tempfile::tempdir().expect("tempdir");
    let script = "echo one; echo two >&2; read x; echo \"got $x\"; exec sleep 300";
    let launched = link::start(env!("CARGO_BIN_EXE_conduit").as_ref(), &spec(dir.path(), script))
        .await
        .expect("the keeper starts");
    let cli = launched.cli_pid;
    let _cleanup = Cleanup(vec![launched.keeper_pid, cli]);
    let mut attached = launched.connection.attach(4, never());
    let mut lines = vec![next_line(&mut attached.output).await, next_line(&mut attached.output).await];
    lines.sort_by_key(|line| line.0);
    assert_eq!(
        lines,
        vec![(5, Stream::Stdout, "one".to_string()), (6, Stream::Stderr, "two".to_string())],
        "numbered from where the session left off, on both streams"
    );
    attached.stdin.send(OutLine::new("hi".to_string())).await.expect("stdin");
    assert_eq!(next_line(&mut attached.output).await, (7, Stream::Stdout, "got hi".to_string()));

    // The service goes (its stdin closes without closing the CLI's), and a new one says it
    // stored up to line 6: it gets line 7 again, nothing before it.
    let detached = attached.handle.detach();
    drop(attached.stdin);
    detached.await;
    drop(attached.output);
    drop(attached.handle);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(alive(cli), "the CLI lives on without a service");
    let again = Connection::connect(&dir.path().join("k.sock")).await.expect("the keeper answers again");
    assert_eq!((again.hello.cli_pid, again.hello.first_seq), (cli, 5), "{:?}", again.hello);
    let keeper = again.hello.keeper_pid;
    let mut attached = again.attach(6, never());
    // Line 5 was stored but never acknowledged: it comes again marked seen (read for a request
    // it might hold, not stored again); line 6 (stderr) does not.
    match tokio::time::timeout(Duration::from_secs(10), attached.output.next()).await {
        Ok(Some(CliOutput::Seen { seq: 5, frame: Frame::Line(line) })) => assert_eq!(line, "one"),
        other => panic!("expected line 5 again, seen, got {other:?}"),
    }
    assert_eq!(next_line(&mut attached.output).await, (7, Stream::Stdout, "got hi".to_string()));

    // SAFETY: SIGKILL to the keeper this test started.
    unsafe { libc::kill(keeper, libc::SIGKILL) };
    match tokio::time::timeout(Duration::from_secs(10), attached.output.next()).await {
        Ok(Some(CliOutput::KeeperLost)) => {}
        other => panic!("expected the keeper's loss, got {other:?}"),
    }
    assert!(gone_within(cli, Duration::from_secs(5)).await, "the CLI went with its keeper");
    assert!(!dir.path().join("k.sock").exists() || Connection::connect(&dir.path().join("k.sock")).await.is_err());
}
