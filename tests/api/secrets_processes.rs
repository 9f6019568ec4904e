//! Secrets in what Conduit's own commands print: an exec command's answer and stream, and a
//! background process's log file on disk, its pages and its followed log. The output is long
//! (hundreds of KiB), so the pipe's reads cut it in several places, most of them inside a
//! secret: every one must still be taken out whole, whatever the cuts.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use crate::exec::{project, sse_events};
use crate::helpers::{spawn_app_with, TestApp};
use crate::secrets_real::{noise, ALNUM};

const LINES: usize = 4000;
const MARKER: &str = "[REDACTED:github-token]";

/// A file of `LINES` lines, each holding one GitHub token; its tokens.
fn secrets_file(folder: &Path) -> Vec<String> {
    let tokens: Vec<String> = (0..LINES).map(|i| format!("ghp_{}", noise(1000 + i as u64, 36, ALNUM))).collect();
    let text: String = tokens.iter().enumerate().map(|(i, t)| format!("line {i:05} {t}\n")).collect();
    std::fs::write(folder.join("secrets.txt"), text).expect("secrets.txt");
    tokens
}

/// How many of `tokens` `text` holds.
fn leaked(text: &str, tokens: &[String]) -> usize {
    tokens.iter().filter(|t| text.contains(t.as_str())).count()
}

async fn app_in(mode: &'static str) -> (TestApp, String, Vec<String>) {
    let app = spawn_app_with(|s| s.redaction = conduit::secrets::RedactionMode::parse(mode).expect("mode")).await;
    let project = project(&app).await;
    let tokens = secrets_file(&app.root.join("exec-project"));
    (app, project, tokens)
}

/// Starts `cat secrets.txt` in the background and waits for its end; its id.
async fn background_cat(app: &TestApp, scope: &str) -> String {
    let res = app.post_json(&format!("{scope}/processes"), &json!({"command": "cat secrets.txt"})).await;
    assert_eq!(res.status().as_u16(), 202, "start");
    let row: Value = res.json().await.expect("json");
    let id = row["id"].as_str().expect("id").to_string();
    for _ in 0..400 {
        let row: Value = app.get(&format!("{scope}/processes/{id}")).await.json().await.expect("row");
        if row["status"] != "running" {
            assert_eq!(row["exit_code"], 0, "{row}");
            return id;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("process {id} did not end");
}

/// The log file of a process, as stored (found under the app's folder).
fn log_file(app: &TestApp, id: &str) -> PathBuf {
    let name = format!("{id}.stdout");
    let mut stack = vec![app.dir.path().to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read_dir").flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.file_name().is_some_and(|n| n == name.as_str()) {
                return path;
            }
        }
    }
    panic!("no log file {name}");
}

/// The whole log read back as pages of 10,000 bytes.
async fn paged(app: &TestApp, scope: &str, id: &str) -> String {
    let (mut offset, mut all) = (0u64, String::new());
    loop {
        let page: Value = app
            .get(&format!("{scope}/processes/{id}/logs?offset={offset}&limit=10000"))
            .await
            .json()
            .await
            .expect("page");
        all.push_str(page["data"].as_str().expect("data"));
        offset = page["next_offset"].as_u64().expect("next_offset");
        if page["complete"] == true {
            return all;
        }
    }
}

async fn followed(app: &TestApp, scope: &str, id: &str) -> String {
    let body = app.get(&format!("{scope}/processes/{id}/logs/stream")).await.text().await.expect("stream");
    sse_events(&body).iter().filter(|(e, _)| e == "stdout").map(|(_, d)| d["data"].as_str().unwrap_or("")).collect()
}

#[actix_web::test]
async fn a_command_s_output_loses_every_secret_wherever_its_reads_were_cut() {
    let (app, project, tokens) = app_in("at_rest").await;
    let scope = format!("/api/projects/{project}");

    let answer: Value = app
        .post_json(&format!("{scope}/exec"), &json!({"command": "cat secrets.txt"}))
        .await
        .json()
        .await
        .expect("json");
    let stdout = answer["stdout"].as_str().expect("stdout");
    assert_eq!((leaked(stdout, &tokens), stdout.matches(MARKER).count()), (0, LINES), "the exec answer");

    let body = app
        .post_json(&format!("{scope}/exec/stream"), &json!({"command": "cat secrets.txt"}))
        .await
        .text()
        .await
        .expect("stream");
    let events = sse_events(&body);
    let streamed: String =
        events.iter().filter(|(e, _)| e == "stdout").map(|(_, d)| d["data"].as_str().unwrap_or("")).collect();
    assert!(events.iter().filter(|(e, _)| e == "stdout").count() > 1, "the output came in several pieces");
    assert_eq!((leaked(&streamed, &tokens), streamed.matches(MARKER).count()), (0, LINES), "the exec stream");

    let id = background_cat(&app, &scope).await;
    let file = std::fs::read_to_string(log_file(&app, &id)).expect("log file");
    assert_eq!((leaked(&file, &tokens), file.matches(MARKER).count()), (0, LINES), "the log file on disk");
    assert!(file.starts_with("line 00000 [REDACTED:github-token]\nline 00001 "), "line by line");
    let pages = paged(&app, &scope, &id).await;
    assert_eq!(pages, file, "the pages are the file");
    let follow = followed(&app, &scope, &id).await;
    assert_eq!(follow, file, "the followed log is the file");
}

#[actix_web::test]
async fn in_flight_a_log_keeps_its_secrets_and_every_read_of_it_loses_them() {
    let (app, project, tokens) = app_in("in_flight").await;
    let scope = format!("/api/projects/{project}");
    let id = background_cat(&app, &scope).await;
    let file = std::fs::read_to_string(log_file(&app, &id)).expect("log file");
    assert_eq!(leaked(&file, &tokens), LINES, "the log file keeps the output as written");
    // Pages of 10,000 bytes end at line ends: no page cuts a secret.
    let pages = paged(&app, &scope, &id).await;
    assert_eq!((leaked(&pages, &tokens), pages.matches(MARKER).count()), (0, LINES), "the pages");
    let follow = followed(&app, &scope, &id).await;
    assert_eq!((leaked(&follow, &tokens), follow.matches(MARKER).count()), (0, LINES), "the followed log");
}
