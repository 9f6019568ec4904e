//! Memory is bounded in bytes, not per line: huge lines pass through one at a time (the reader
//! waits while the session's unstored backlog is full), streams carry them truncated, and the
//! memory comes back once they are stored.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::service::{fake_cli, ServiceConfig, TestService};

/// The service's resident memory, in MiB.
fn rss_mib(pid: i32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    kib / 1024.0
}

/// The documented bound (README, "Memory"): while huge lines pass, the service holds at most
/// four copies of the largest line above its resting size (measured: about two); afterwards it
/// gives the memory back.
const PEAK_LINES: f64 = 4.0;

#[actix_web::test]
async fn twenty_lines_of_30_mib_keep_memory_bounded_and_give_it_back() {
    let service = TestService::start(ServiceConfig::new(fake_cli()));
    let project = service.project("huge").await;
    let session = service.launch(&project, json!({"model": "fake-huge-20-30"})).await;
    let id = session["id"].as_str().expect("id").to_string();
    service.wait_status(&id, "idle", Duration::from_secs(30)).await;
    // A stream client, so the lines also travel through the bus.
    let sse = service.client.get(service.url(&format!("/api/sessions/{id}/stream"))).send().await.expect("sse");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let resting = rss_mib(service.pid());

    let res = service.post(&format!("/api/sessions/{id}/message"), json!({"content": "go"})).await;
    assert_eq!(res.status().as_u16(), 202);
    let mut peak = resting;
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        peak = peak.max(rss_mib(service.pid()));
        let row = service.get_json(&format!("/api/sessions/{id}")).await;
        if row["num_turns"] == 1 && row["status"] == "idle" {
            break;
        }
        assert!(Instant::now() < deadline, "the turn did not finish: {row}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    drop(sse);
    service.get_json(&format!("/api/sessions/{id}/messages?limit=1")).await; // flushes the writer
    let mut conn = crate::support::database::connect(&service.dir.path().join("data/conduit.db"));
    let huge: i64 = {
        use conduit::db::schema::messages;
        use diesel::prelude::*;
        messages::table
            .filter(messages::session_id.eq(&id))
            .filter(diesel::dsl::sql::<diesel::sql_types::Bool>("length(content) > 31000000"))
            .count()
            .get_result(&mut conn)
            .expect("count")
    };
    assert_eq!(huge, 20, "every 30 MiB line is stored whole");
    let res = service.delete(&format!("/api/sessions/{id}")).await;
    assert_eq!(res.status().as_u16(), 200);
    tokio::time::sleep(Duration::from_secs(12)).await;
    let after = rss_mib(service.pid());
    println!("huge lines: resting {resting:.0} MiB, peak {peak:.0} MiB, after {after:.0} MiB");
    assert!(peak - resting < PEAK_LINES * 30.0, "peak {peak:.0} MiB over a resting {resting:.0} MiB");
    assert!(after - resting < 30.0, "after the session, {after:.0} MiB stays held (resting {resting:.0} MiB)");
}
