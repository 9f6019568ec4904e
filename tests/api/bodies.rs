//! Request bodies over the 1 MiB limit, seen from a raw TCP client (issue 13): the 413 comes
//! before the body (when `Content-Length` announces too much) or as soon as the limit is passed
//! (chunked), and the connection is closed right after it, not kept open while the service
//! reads the rest. Also: the JSON-object rule holds for every JSON content type and for
//! compressed bodies.
//!
//! The clients send slowly (a fixed pace, never faster), so "closed after a small part" is a
//! count of bytes, not a measure of time.

use std::io::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::helpers::{error_code, spawn_app, TestApp};

const ANNOUNCED: u64 = 100 * 1024 * 1024;
const PIECE: usize = 32 * 1024;
/// Pieces are sent this far apart: about 3 MB/s, 100 MB in half a minute.
const PACE: Duration = Duration::from_millis(10);
/// What "a small part" of the 100 MB means.
const SMALL_PART: u64 = 20 * 1024 * 1024;

#[derive(Clone, Copy, PartialEq)]
enum Framing {
    /// `Content-Length: 100 MiB`; no byte of the body is sent before the answer comes.
    Announced,
    /// `Transfer-Encoding: chunked`, sent from the start.
    Chunked,
}

struct Outcome {
    /// Everything the service wrote before closing.
    response: String,
    /// Body bytes sent before the answer arrived, and before the connection was seen closed.
    sent_before_answer: u64,
    sent_before_close: u64,
}

/// Sends `head` and then up to 100 MB of body at a slow pace, reading whatever comes back,
/// until the service closes the connection (or the whole body went through).
async fn slow_upload(app: &TestApp, head: &str, framing: Framing) -> Outcome {
    let stream = TcpStream::connect(("127.0.0.1", app.port)).await.expect("connect");
    let (mut reader, mut writer) = stream.into_split();
    writer.write_all(head.as_bytes()).await.expect("write the head");

    let sent = Arc::new(AtomicU64::new(0));
    let answered = Arc::new(AtomicBool::new(false));
    let sender = {
        let (sent, answered) = (sent.clone(), answered.clone());
        tokio::spawn(async move {
            // Announced: nothing is sent until the service has answered (it must not wait).
            while framing == Framing::Announced && !answered.load(Ordering::SeqCst) {
                tokio::time::sleep(PACE).await;
            }
            let data = vec![b' '; PIECE];
            let mut piece = Vec::with_capacity(PIECE + 16);
            while sent.load(Ordering::SeqCst) < ANNOUNCED {
                piece.clear();
                if framing == Framing::Chunked {
                    write!(piece, "{PIECE:x}\r\n").expect("chunk size");
                }
                piece.extend_from_slice(&data);
                if framing == Framing::Chunked {
                    piece.extend_from_slice(b"\r\n");
                }
                if writer.write_all(&piece).await.is_err() {
                    return; // The service closed the connection.
                }
                sent.fetch_add(PIECE as u64, Ordering::SeqCst);
                tokio::time::sleep(PACE).await;
            }
        })
    };

    let mut response = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut sent_before_answer = None;
    // A safety net for a broken service only: at the pace above, the whole body takes ~35 s.
    let read_all = async {
        loop {
            match reader.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    response.extend_from_slice(&buf[..n]);
                    if sent_before_answer.is_none() && response.windows(4).any(|w| w == b"\r\n\r\n") {
                        sent_before_answer = Some(sent.load(Ordering::SeqCst));
                        answered.store(true, Ordering::SeqCst);
                    }
                }
            }
        }
    };
    let finished = tokio::time::timeout(Duration::from_secs(120), read_all).await.is_ok();
    let sent_before_close = sent.load(Ordering::SeqCst);
    sender.abort();
    assert!(finished, "the connection was still open after 120 s");
    Outcome {
        response: String::from_utf8_lossy(&response).into_owned(),
        sent_before_answer: sent_before_answer.unwrap_or(u64::MAX),
        sent_before_close,
    }
}

fn head(path: &str, content_type: &str, framing: Framing, extra: &str) -> String {
    let framing = match framing {
        Framing::Announced => format!("Content-Length: {ANNOUNCED}\r\n"),
        Framing::Chunked => "Transfer-Encoding: chunked\r\n".to_string(),
    };
    format!("POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {content_type}\r\n{framing}{extra}\r\n")
}

fn assert_refused_and_closed(outcome: &Outcome, status: &str, code: &str, within: u64) {
    let text = &outcome.response;
    eprintln!(
        "{status}: answered after {} body bytes, connection closed after {}",
        outcome.sent_before_answer, outcome.sent_before_close
    );
    assert!(text.starts_with(&format!("HTTP/1.1 {status}")), "answer: {text:.300}");
    assert!(text.to_ascii_lowercase().contains("\r\nconnection: close\r\n"), "no Connection: close in {text:.300}");
    assert!(text.contains(&format!("\"code\":\"{code}\"")), "answer body: {text:.300}");
    assert!(
        outcome.sent_before_answer <= within,
        "answered only after {} body bytes (expected at most {within})",
        outcome.sent_before_answer
    );
    assert!(
        outcome.sent_before_close < SMALL_PART,
        "the connection stayed open until {} of the {ANNOUNCED} bytes were sent",
        outcome.sent_before_close
    );
}

#[actix_web::test]
async fn an_announced_body_over_the_limit_is_refused_before_it_is_sent_and_the_connection_closed() {
    let app = spawn_app().await;
    for content_type in ["application/json", "text/plain"] {
        let outcome =
            slow_upload(&app, &head("/api/projects", content_type, Framing::Announced, ""), Framing::Announced).await;
        assert_refused_and_closed(&outcome, "413", "payload_too_large", 0);
    }
}

#[actix_web::test]
async fn a_chunked_body_over_the_limit_is_refused_at_the_limit_and_the_connection_closed() {
    let app = spawn_app().await;
    // Not only JSON: a body nobody reads would otherwise be read to its end after the answer.
    for content_type in ["application/json", "text/plain"] {
        let outcome =
            slow_upload(&app, &head("/api/projects", content_type, Framing::Chunked, ""), Framing::Chunked).await;
        // The limit, give or take what was in flight.
        assert_refused_and_closed(&outcome, "413", "payload_too_large", 2 * 1024 * 1024);
    }
}

#[actix_web::test]
async fn a_refused_origin_does_not_read_the_body_either() {
    let app = spawn_app().await;
    let extra = "Origin: http://evil.example\r\n";
    for framing in [Framing::Announced, Framing::Chunked] {
        let outcome = slow_upload(&app, &head("/api/projects", "application/json", framing, extra), framing).await;
        assert_refused_and_closed(&outcome, "403", "origin_not_allowed", 1024 * 1024);
    }
}

#[actix_web::test]
async fn a_body_within_the_limit_keeps_the_connection() {
    let app = spawn_app().await;
    app.mkdir("kept");
    let body = json!({"name": "Kept", "folder_path": "kept", "description": "x".repeat(900 * 1024)}).to_string();
    let mut stream = TcpStream::connect(("127.0.0.1", app.port)).await.expect("connect");
    let request = format!(
        "POST /api/projects HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut seen = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    // Two answers on one connection: the body was read, the connection kept.
    while String::from_utf8_lossy(&seen).matches("HTTP/1.1 ").count() < 2 {
        let n = tokio::time::timeout(Duration::from_secs(30), stream.read(&mut buf))
            .await
            .expect("answers within 30 s")
            .expect("read");
        assert!(n > 0, "closed early: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&seen);
    // The description is refused (over 10,000 bytes), which is beside the point here.
    assert!(text.starts_with("HTTP/1.1 422"), "{text:.300}");
    assert!(!text.to_ascii_lowercase().contains("connection: close"), "{text:.300}");
}

fn gzip(data: &[u8]) -> Vec<u8> {
    // A stored (uncompressed) deflate block in a gzip frame: no compression crate needed.
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
    for (i, block) in data.chunks(65535).enumerate() {
        let last = (i + 1) * 65535 >= data.len();
        out.push(u8::from(last));
        let len = block.len() as u16;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(block);
    }
    if data.is_empty() {
        out.extend_from_slice(&[1, 0, 0, 0xff, 0xff]);
    }
    out.extend_from_slice(&crc32(data).to_le_bytes());
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for byte in data {
        crc ^= u32::from(*byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

/// Issue 13 follow-up: `text/json`, `application/*+json` and gzip-encoded bodies reached the
/// `Json` extractor without the array check, so an array still filled a struct by position.
#[actix_web::test]
async fn a_json_array_is_refused_whatever_its_content_type_or_encoding() {
    let app = spawn_app().await;
    app.mkdir("arr");
    let array = json!(["Arr", "arr", null, null, null, null, null, null]).to_string();
    let object = json!({"name": "Obj", "folder_path": "arr"}).to_string();
    let post = |content_type: &'static str, encoding: Option<&'static str>, body: Vec<u8>| {
        let mut req = app.client.post(app.url("/api/projects")).header("content-type", content_type).body(body);
        if let Some(e) = encoding {
            req = req.header("content-encoding", e);
        }
        req.send()
    };
    for content_type in
        ["application/json", "text/json", "application/vnd.conduit+json", "application/json; charset=utf-8"]
    {
        let res = post(content_type, None, array.clone().into_bytes()).await.expect("request");
        assert_eq!(error_code(res, 422).await, "validation_failed", "{content_type}");
        let res = post(content_type, Some("gzip"), gzip(array.as_bytes())).await.expect("request");
        assert_eq!(error_code(res, 422).await, "validation_failed", "{content_type}, gzip");
    }
    // A compressed object is still read as usual.
    let res = post("application/json", Some("gzip"), gzip(object.as_bytes())).await.expect("request");
    assert_eq!(res.status().as_u16(), 201);
    let created: Value = res.json().await.expect("json");
    assert_eq!(created["name"], "Obj");
    // Not gzip at all.
    let res = post("application/json", Some("gzip"), b"not gzip".to_vec()).await.expect("request");
    assert_eq!(error_code(res, 400).await, "bad_request");
}
