//! Workspace benchmark: `scripts/bench.sh workspaces` (builds the fake CLI, then runs this).
//!
//! The cost a worktree adds to a launch. Measured in the same run, interleaved, medians of N:
//! - a session of a `worktree` project, POST to idle (the worktree made by `git worktree add`,
//!   then the CLI started in it);
//! - the baseline: a bare `git worktree add -b` of the same repository (then removed), plus a
//!   session of a `shared` project on a plain folder, POST to idle.
//!
//! The added cost is the worktree launch minus (bare worktree add + plain launch): Conduit's
//! own share (the repository checks, the events, the row's update). Both projects run with
//! `sandbox: off` so only the workspace differs. Loss: every worktree launch must reach idle in
//! its own checkout with every file of the repository, and after each session is deleted no
//! checkout may be left (archived) and no branch lost.
//!
//! The service runs in this process, on a real loopback port. BENCH_LAUNCHES (default 30),
//! BENCH_REPO_FILES (files in the repository, default 500).

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{env_usize, start_service};
use serde_json::{json, Value};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=Bench", "-c", "user.email=bench@example.com"])
        .args(args)
        .output()
        .expect("git");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A repository of `files` small files in a few folders, one commit on `main`.
fn repository(dir: &Path, files: usize) {
    std::fs::create_dir_all(dir).expect("repo");
    git(dir, &["init", "-q", "-b", "main"]);
    for i in 0..files {
        let file = dir.join(format!("src/m{}/f{i}.txt", i % 20));
        std::fs::create_dir_all(file.parent().expect("parent")).expect("folders");
        std::fs::write(file, format!("file {i}\n").repeat(20)).expect("file");
    }
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "base"]);
}

/// The baseline's worktree: `git worktree add -b` into a fresh folder, timed; then removed.
fn bare_worktree_add(repo: &Path, into: &Path, n: usize) -> Duration {
    let (path, branch) = (into.join(format!("bare-{n}")), format!("bare/{n}"));
    let path_text = path.to_string_lossy().into_owned();
    let started = Instant::now();
    git(repo, &["worktree", "add", "-q", "--no-track", "-b", &branch, &path_text, "main"]);
    let took = started.elapsed();
    git(repo, &["worktree", "remove", "--force", &path_text]);
    git(repo, &["branch", "-q", "-D", &branch]);
    took
}

struct Client {
    base: String,
    http: reqwest::Client,
}

impl Client {
    async fn project(&self, body: Value) -> String {
        let res = self.http.post(format!("{}/api/projects", self.base)).json(&body).send().await.expect("project");
        let v: Value = res.json().await.expect("json");
        v["id"].as_str().unwrap_or_else(|| panic!("project: {v}")).to_string()
    }

    /// POST to idle; answers the time and the session's row once idle.
    async fn launch_to_idle(&self, project: &str) -> (Duration, Value) {
        let started = Instant::now();
        let res = self
            .http
            .post(format!("{}/api/projects/{project}/sessions", self.base))
            .json(&json!({}))
            .send()
            .await
            .expect("launch");
        assert_eq!(res.status().as_u16(), 201);
        let row: Value = res.json().await.expect("json");
        let id = row["id"].as_str().expect("id").to_string();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let row: Value = self
                .http
                .get(format!("{}/api/sessions/{id}", self.base))
                .send()
                .await
                .expect("get")
                .json()
                .await
                .expect("json");
            if row["status"] == "idle" {
                return (started.elapsed(), row);
            }
            assert!(row["status"] != "error" && Instant::now() < deadline, "the session did not reach idle: {row}");
        }
    }

    async fn delete(&self, id: &str) {
        self.http.delete(format!("{}/api/sessions/{id}", self.base)).send().await.expect("delete");
    }
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("workspaces benchmark: skipped (run it with scripts/bench.sh workspaces)");
        return;
    }
    let n = env_usize("BENCH_LAUNCHES", 30);
    let files = env_usize("BENCH_REPO_FILES", 500);
    actix_web::rt::System::new().block_on(async move {
        let service = start_service(100).await;
        let root = service.dir.path();
        let repo = root.join("repo");
        repository(&repo, files);
        std::fs::create_dir_all(root.join("plain")).expect("plain");
        let bare_dir = root.join("bare-worktrees");
        let client = Client { base: service.base.clone(), http: reqwest::Client::new() };
        let worktree = client
            .project(json!({"name": "repo", "folder_path": "repo", "workspace_mode": "worktree", "sandbox": "off"}))
            .await;
        let plain = client.project(json!({"name": "plain", "folder_path": "plain", "sandbox": "off"})).await;

        let (mut with, mut bare, mut shared) = (Vec::new(), Vec::new(), Vec::new());
        let (mut incomplete, mut left, mut ids) = (0usize, 0usize, Vec::new());
        for i in 0..(n + 3) {
            let b = bare_worktree_add(&repo, &bare_dir, i);
            let (s, plain_row) = client.launch_to_idle(&plain).await;
            let (w, row) = client.launch_to_idle(&worktree).await;
            let id = row["id"].as_str().expect("id").to_string();
            let path = std::path::PathBuf::from(row["worktree_path"].as_str().expect("worktree_path"));
            let checked_out = git(&path, &["ls-files"]).lines().count();
            if checked_out != files {
                incomplete += 1;
            }
            client.delete(&id).await;
            client.delete(plain_row["id"].as_str().expect("id")).await;
            if path.exists() {
                left += 1;
            }
            ids.push((id, row["branch"].as_str().unwrap_or_default().to_string()));
            if i >= 3 {
                bare.push(b);
                shared.push(s);
                with.push(w);
            }
        }
        let lost_branches = ids.iter().filter(|(_, branch)| git(&repo, &["branch", "--list", branch]).trim().is_empty()).count();
        let (w, b, s) = (median(with), median(bare), median(shared));
        let baseline = b + s;
        println!(
            "worktree launch ({files} files): POST-to-idle median {:.2} ms vs bare `git worktree add` {:.2} ms + shared launch {:.2} ms = {:.2} ms: {:.2} ms added, ratio {:.2}x (target: <= 20 ms added)",
            ms(w),
            ms(b),
            ms(s),
            ms(baseline),
            ms(w.saturating_sub(baseline)),
            w.as_secs_f64() / baseline.as_secs_f64()
        );
        println!(
            "worktree loss: {incomplete} of {} launches with an incomplete checkout, {left} checkouts left after delete, {lost_branches} branches lost (all must be 0)",
            n + 3
        );
    });
}
