//! The automation and review pages end to end in real headless Chromium
//! (ui/e2e/pages.e2e.mjs) against the real binary and the fake CLI: a scheduled agent made
//! with the form and run now, a global rule added, edited and deleted, a worktree session's
//! terminal, diff and commit, every page on a phone with no horizontal scroll, and dark
//! screenshots that must be dark (E2E_REQUIRE_DARK=1).

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::browser;
use crate::support::service::{fake_cli, ServiceConfig, TestService};
use crate::workspaces_real::{git, repo};

/// The git repository the script's worktree project is made on (under the project root).
const REPO_FOLDER: &str = "e2e-repo";
/// What the script commits with (ui/e2e/pages.e2e.mjs, COMMIT_MESSAGE).
const COMMIT_MESSAGE: &str = "e2e: the note written in the terminal";

fn rows(v: &Value) -> &Vec<Value> {
    v.as_array().unwrap_or_else(|| panic!("an array: {v}"))
}

#[actix_web::test]
async fn pages_end_to_end_in_chromium() {
    browser::chromium();
    let service = TestService::start(ServiceConfig::new(fake_cli()));
    let folder = service.root.join(REPO_FOLDER);
    repo(&folder, &[("README.md", "the e2e repository\n")]);
    let base_head = git(&folder, &["rev-parse", "HEAD"]);

    let shots = browser::fresh_screenshot_dir("dashboard-pages");
    let started = Instant::now();
    let env = vec![("E2E_REPO_FOLDER", REPO_FOLDER.to_string()), ("E2E_REQUIRE_DARK", "1".to_string())];
    browser::run_script("pages.e2e.mjs", &service, &shots, env).await;

    // The agent made with the form ran once ("Run now") and finished.
    let agents = service.get_json("/api/agents").await;
    let agent = rows(&agents)
        .iter()
        .find(|a| a["name"].as_str().is_some_and(|n| n.starts_with("E2E agent")))
        .unwrap_or_else(|| panic!("the agent made in the UI: {agents}"));
    let agent_id = agent["id"].as_str().expect("agent id");
    let runs = service.get_json(&format!("/api/agents/{agent_id}/executions")).await;
    assert_eq!(rows(&runs).len(), 1, "one run, from \"Run now\": {runs}");
    let run = &rows(&runs)[0];
    assert_eq!(run["status"], "success", "{run}");
    assert_eq!(run["trigger"], "manual", "{run}");
    assert!(run["finished_at"].is_string(), "{run}");
    let detail = service.get_json(&format!("/api/executions/{}", run["id"].as_str().expect("run id"))).await;
    let objective = agent["objective"].as_str().expect("objective");
    assert_eq!(detail["output"].as_str(), Some(format!("echo: {objective}").as_str()), "{detail}");

    // The rule was added, edited and deleted: none is left.
    let rules = service.get_json("/api/rules/global").await;
    assert!(rows(&rules).is_empty(), "the rule was deleted in the UI: {rules}");

    // The commit made on the review page landed on the session's branch, not on its base.
    let projects = service.get_json("/api/projects").await;
    let project = rows(&projects)
        .iter()
        .find(|p| p["name"].as_str().is_some_and(|n| n.starts_with("E2E worktree")))
        .unwrap_or_else(|| panic!("the script's project: {projects}"));
    assert_eq!(project["workspace_mode"], "worktree", "{project}");
    let sessions = service.get_json(&format!("/api/projects/{}/sessions", project["id"].as_str().expect("id"))).await;
    assert_eq!(rows(&sessions).len(), 1, "{sessions}");
    let session = &rows(&sessions)[0];
    let branch = session["branch"].as_str().unwrap_or_else(|| panic!("a worktree session has a branch: {session}"));
    let (note, parent) = (format!("{branch}:e2e-note.txt"), format!("{branch}~1"));
    assert_eq!(git(&folder, &["log", "-1", "--format=%s", branch]).trim(), COMMIT_MESSAGE);
    assert_eq!(git(&folder, &["show", note.as_str()]), "hello-e2e\n", "written in the terminal");
    assert_eq!(git(&folder, &["rev-parse", parent.as_str()]), base_head, "one commit on top of its base");
    assert_eq!(git(&folder, &["rev-parse", "main"]), base_head, "the base branch did not move");

    for shot in [
        "agent-form",
        "agent-run",
        "rules-added",
        "rules-edited",
        "rules-deleted",
        "review-diff",
        "review-committed",
        "phone-dashboard",
        "phone-agents",
        "phone-rules",
        "phone-processes",
        "phone-webhooks",
        "phone-permissions",
        "phone-session",
        "phone-review",
        "dark-dashboard",
        "dark-agents",
        "dark-review",
    ] {
        assert!(shots.join(format!("{shot}.png")).is_file(), "screenshot {shot}");
    }
    assert!(started.elapsed() < Duration::from_secs(180), "the browser run took {:?}", started.elapsed());
}
