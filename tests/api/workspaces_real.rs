//! Worktree workspaces end to end: real `git` in temporary repositories, the real Claude Code
//! CLI talking to the fake Messages API, in the default sandbox.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::fake_api::{FakeApi, Reply};
use crate::support::service::{real_cli, ServiceConfig, TestService};

const READY: Duration = Duration::from_secs(60);

/// `git` in `dir` with a fixed identity and none of the machine's configuration; its stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.com", "-c", "init.defaultBranch=main"])
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A repository at `dir` on branch `main` with `files` committed.
pub fn repo(dir: &Path, files: &[(&str, &str)]) {
    std::fs::create_dir_all(dir).expect("repo folder");
    git(dir, &["init", "-q", "-b", "main"]);
    for (path, text) in files {
        let file = dir.join(path);
        std::fs::create_dir_all(file.parent().expect("parent")).expect("parents");
        std::fs::write(file, text).expect("write");
    }
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "base"]);
}

async fn rig(config: impl FnOnce(ServiceConfig) -> ServiceConfig) -> (FakeApi, TestService) {
    let api = FakeApi::start().await;
    let service = TestService::start(config(ServiceConfig::new(real_cli()).api(&api.base_url)));
    (api, service)
}

async fn create_project(service: &TestService, body: Value) -> Value {
    let res = service.post("/api/projects", body).await;
    assert_eq!(res.status().as_u16(), 201, "create project");
    res.json().await.expect("json")
}

pub async fn idle(service: &TestService, project: &str, name: &str) -> Value {
    let session = service.launch(project, json!({"name": name})).await;
    let id = session["id"].as_str().expect("id").to_string();
    service.wait_status(&id, "idle", READY).await
}

/// The model runs `command` with Bash on `prompt`; waits for the turn to end.
pub async fn run_bash(api: &FakeApi, service: &TestService, session: &str, prompt: &str, command: &str, turns: i64) {
    api.on(prompt, Reply::ToolUse { name: "Bash".into(), input: json!({"command": command, "description": prompt}) });
    api.on("tool_result", Reply::Text(format!("{prompt}: done")));
    let res = service.post(&format!("/api/sessions/{session}/message"), json!({"content": prompt})).await;
    assert_eq!(res.status().as_u16(), 202);
    service.wait_for(session, READY, |r| r["num_turns"] == turns && r["status"] == "idle").await;
}

fn path_of(row: &Value) -> PathBuf {
    PathBuf::from(row["worktree_path"].as_str().expect("worktree_path"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Reads the session's stream from the start until `wanted` shows up (or fails after 10 s).
async fn stream_until(service: &TestService, id: &str, wanted: &str) -> String {
    let mut stream = service.get(&format!("/api/sessions/{id}/stream?since=0")).await;
    let (mut seen, deadline) = (String::new(), tokio::time::Instant::now() + Duration::from_secs(10));
    while !seen.contains(wanted) {
        match tokio::time::timeout_at(deadline, stream.chunk()).await {
            Ok(Ok(Some(chunk))) => seen.push_str(&String::from_utf8_lossy(&chunk)),
            other => panic!("{wanted:?} never came on the session's stream: {other:?}\n{seen}"),
        }
    }
    seen
}

#[actix_web::test]
async fn two_sessions_change_one_file_apart_then_one_merges_and_the_other_conflicts() {
    let (api, service) = rig(|c| c).await;
    let folder = service.root.join("shop");
    repo(&folder, &[("shared.txt", "base\n"), ("README", "shop\n")]);
    let project = create_project(&service, json!({"name": "shop", "folder_path": "shop"})).await;
    assert_eq!(project["workspace_mode"], "worktree", "a git project gets a worktree per session by default");
    let project = project["id"].as_str().expect("id").to_string();

    let a = idle(&service, &project, "Alpha work").await;
    let b = idle(&service, &project, "Beta work").await;
    let (a_id, b_id) = (a["id"].as_str().expect("id").to_string(), b["id"].as_str().expect("id").to_string());
    assert_eq!((a["workspace_mode"].as_str(), a["branch"].as_str()), (Some("worktree"), Some("conduit/alpha-work")));
    assert_eq!((a["base_ref"].as_str(), b["branch"].as_str()), (Some("main"), Some("conduit/beta-work")));
    let head = git(&folder, &["rev-parse", "HEAD"]);
    assert_eq!(a["base_commit"].as_str(), Some(head.trim()));
    let (a_dir, b_dir) = (path_of(&a), path_of(&b));
    assert!(a_dir.starts_with(service.dir.path().join("data/workspaces")), "beside the database: {a_dir:?}");

    // Each writes its own version of the same file, in its own worktree, inside the sandbox;
    // session A also commits on its branch itself (the sandbox lets git write the repository).
    let commit_in_a = "printf 'version A\\n' > shared.txt && git add -A && git -c user.name=M -c user.email=m@x commit -qm 'A by the model'";
    run_bash(&api, &service, &a_id, "write A", commit_in_a, 1).await;
    run_bash(&api, &service, &b_id, "write B", "printf 'version B\\n' > shared.txt", 1).await;
    assert_eq!(read(&a_dir.join("shared.txt")), "version A\n");
    assert_eq!(read(&b_dir.join("shared.txt")), "version B\n");
    assert_eq!(read(&folder.join("shared.txt")), "base\n", "the project folder is untouched");
    assert_eq!(git(&folder, &["status", "--porcelain"]), "");
    let model_commit = git(&folder, &["log", "-1", "--format=%s", "conduit/alpha-work"]);
    assert_eq!(model_commit.trim(), "A by the model", "the sandboxed CLI committed on its branch");

    for (id, version) in [(&a_id, "A"), (&b_id, "B")] {
        let diff = service.get_json(&format!("/api/sessions/{id}/diff")).await;
        assert_eq!(diff["total_files"], 1, "{diff}");
        assert_eq!(diff["files"][0]["path"], "shared.txt");
        assert_eq!(diff["files"][0]["status"], "modified");
        assert_eq!(
            (diff["files"][0]["additions"].as_u64(), diff["files"][0]["deletions"].as_u64()),
            (Some(1), Some(1))
        );
        let patch = diff["patch"].as_str().expect("patch");
        assert!(patch.contains("-base") && patch.contains(&format!("+version {version}")), "{patch}");
        assert_eq!(diff["truncated"], false);
    }
    // Looking at the diff staged nothing.
    assert!(git(&b_dir, &["diff", "--cached", "--name-only"]).is_empty());

    let res = service.post(&format!("/api/sessions/{a_id}/commit"), json!({"message": "nothing left"})).await;
    assert_eq!(crate::helpers::error_code(res, 409).await, "workspace_conflict", "A has nothing left to commit");
    let res = service.post(&format!("/api/sessions/{b_id}/merge"), json!({})).await;
    assert_eq!(crate::helpers::error_code(res, 409).await, "workspace_conflict", "B must commit first");
    let res = service.post(&format!("/api/sessions/{b_id}/commit"), json!({"message": "Version B"})).await;
    assert_eq!(res.status().as_u16(), 201);
    let committed: Value = res.json().await.expect("json");
    assert_eq!(committed["branch"], "conduit/beta-work");

    let res = service.post(&format!("/api/sessions/{a_id}/merge"), json!({"strategy": "fast_forward"})).await;
    assert_eq!(res.status().as_u16(), 200);
    let merged: Value = res.json().await.expect("json");
    assert_eq!((merged["strategy"].as_str(), merged["base_ref"].as_str()), (Some("fast_forward"), Some("main")));
    assert_eq!(read(&folder.join("shared.txt")), "version A\n", "the checkout of main followed the merge");
    let main_after_a = git(&folder, &["rev-parse", "main"]);

    let res = service.post(&format!("/api/sessions/{b_id}/merge"), json!({"strategy": "merge_commit"})).await;
    assert_eq!(res.status().as_u16(), 409);
    let conflict: Value = res.json().await.expect("json");
    assert_eq!(conflict["error"]["code"], "merge_conflict", "{conflict}");
    assert_eq!(conflict["files"], json!(["shared.txt"]));
    assert!(conflict["error"]["message"].as_str().is_some_and(|m| m.contains("shared.txt")));
    assert_eq!(git(&folder, &["rev-parse", "main"]), main_after_a, "main did not move");
    assert_eq!(git(&folder, &["status", "--porcelain"]), "", "nothing half-merged in the base checkout");
    assert!(!folder.join(".git/MERGE_HEAD").exists());
    assert_eq!(read(&folder.join("shared.txt")), "version A\n");
}

#[actix_web::test]
async fn setup_copies_files_and_streams_its_script_and_a_failing_script_fails_the_session() {
    let (_api, service) = rig(|c| c).await;
    let folder = service.root.join("app");
    repo(&folder, &[("src/main.txt", "code\n"), (".gitignore", ".env\n*.local\n")]);
    std::fs::write(folder.join(".env"), "SECRET=1\n").expect(".env");
    std::fs::create_dir_all(folder.join("conf")).expect("conf");
    std::fs::write(folder.join("conf/db.local"), "local db\n").expect("local");
    std::fs::write(folder.join("conf/other.txt"), "not copied\n").expect("other");
    let script = "echo preparing; cat .env; echo to-stderr >&2; echo ready > setup.marker";
    let project = create_project(
        &service,
        json!({"name": "app", "folder_path": "app", "workspace_copy": [".env", "conf/*.local"], "setup_script": script}),
    )
    .await;
    assert_eq!(project["workspace_copy"], json!([".env", "conf/*.local"]));
    let project = project["id"].as_str().expect("id").to_string();

    let session = idle(&service, &project, "setup").await;
    let dir = path_of(&session);
    assert_eq!(read(&dir.join(".env")), "SECRET=1\n");
    assert_eq!(read(&dir.join("conf/db.local")), "local db\n");
    assert!(!dir.join("conf/other.txt").exists(), "only what the list names");
    assert_eq!(read(&dir.join("setup.marker")), "ready\n", "the script ran in the worktree");
    assert!(!folder.join("setup.marker").exists(), "and not in the project folder");
    let id = session["id"].as_str().expect("id");
    let seen = stream_until(&service, id, "session_created").await;
    for expected in [
        "workspace.created",
        "\"line\":\"preparing\"",
        "\"line\":\"SECRET=1\"",
        "\"stream\":\"stderr\"",
        "workspace.ready",
    ] {
        assert!(seen.contains(expected), "{expected} in the stream:\n{seen}");
    }
    let created_at = seen.find("workspace.created").expect("created");
    assert!(created_at < seen.find("session_created").expect("session"), "setup comes before the CLI");

    let res = service
        .client
        .put(service.url(&format!("/api/projects/{project}")))
        .json(&json!({"setup_script": "echo boom-output; exit 3"}))
        .send()
        .await
        .expect("request");
    assert_eq!(res.status().as_u16(), 200);
    let failed = service.launch(&project, json!({"name": "broken"})).await;
    assert_eq!(failed["status"], "error", "{failed}");
    let message = failed["error_message"].as_str().expect("error_message");
    assert!(message.contains("exit 3") && message.contains("boom-output"), "{message}");
    assert!(failed["cli_pid"].is_null(), "no CLI was started");
    let id = failed["id"].as_str().expect("id");
    let seen = stream_until(&service, id, "workspace.setup_failed").await;
    assert!(seen.contains("\"line\":\"boom-output\""), "{seen}");
}

#[actix_web::test]
async fn an_archived_worktree_comes_back_on_resume_and_orphans_are_pruned() {
    let (api, service) = rig(|c| c.env("CONDUIT_JANITOR_INTERVAL_MS", "200")).await;
    let folder = service.root.join("lib");
    repo(&folder, &[("lib.txt", "v1\n")]);
    let project = create_project(&service, json!({"name": "lib", "folder_path": "lib"})).await;
    let project = project["id"].as_str().expect("id").to_string();
    let session = idle(&service, &project, "keeper").await;
    let (id, dir) = (session["id"].as_str().expect("id").to_string(), path_of(&session));
    run_bash(&api, &service, &id, "make notes", "echo draft > notes.txt", 1).await;

    let res = service.delete(&format!("/api/sessions/{id}")).await;
    assert_eq!(res.status().as_u16(), 200);
    assert!(!dir.exists(), "the checkout is removed");
    let kept = git(&folder, &["show", "conduit/keeper:notes.txt"]);
    assert_eq!(kept, "draft\n", "uncommitted work was kept on the branch");
    assert!(!git(&folder, &["worktree", "list"]).contains(dir.to_str().expect("utf-8")));

    let res = service.post(&format!("/api/sessions/{id}/resume"), json!({})).await;
    assert_eq!(res.status().as_u16(), 200);
    let resumed = service.wait_status(&id, "idle", READY).await;
    assert_eq!(path_of(&resumed), dir, "the same worktree");
    assert_eq!(read(&dir.join("notes.txt")), "draft\n", "made again from its branch");
    run_bash(&api, &service, &id, "pwd please", "pwd > where.txt", 2).await;
    assert_eq!(read(&dir.join("where.txt")).trim(), dir.to_str().expect("utf-8"), "the resumed CLI works there");

    // The project goes (its sessions' rows with it): the janitor prunes the worktree.
    let res = service.delete(&format!("/api/projects/{project}")).await;
    assert_eq!(res.status().as_u16(), 204);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while dir.exists() {
        assert!(std::time::Instant::now() < deadline, "the orphaned worktree was never pruned\n{}", service.log());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(!git(&folder, &["worktree", "list"]).contains(dir.to_str().expect("utf-8")), "git forgot it too");
    assert!(git(&folder, &["branch", "--list", "conduit/keeper"]).contains("conduit/keeper"), "the branch stays");
}

#[actix_web::test]
async fn commands_run_in_the_sessions_worktree_and_may_commit_on_its_branch() {
    let (_api, service) = rig(|c| c).await;
    let folder = service.root.join("tools");
    repo(&folder, &[("README", "tools\n")]);
    let project = create_project(&service, json!({"name": "tools", "folder_path": "tools"})).await;
    let project = project["id"].as_str().expect("id").to_string();
    let session = idle(&service, &project, "Exec work").await;
    let (id, dir) = (session["id"].as_str().expect("id").to_string(), path_of(&session));

    // An exec command in the default sandbox: it works in the worktree, and git may write the
    // parts of the repository a commit needs (shared into its fence as into the CLI's).
    let command = "pwd && printf 'by exec\\n' > made.txt && git add -A && git -c user.name=E -c user.email=e@x commit -qm 'by exec'";
    let res = service.post(&format!("/api/sessions/{id}/exec"), json!({"command": command})).await;
    assert_eq!(res.status().as_u16(), 200);
    let ran: Value = res.json().await.expect("json");
    assert_eq!(ran["exit_code"], 0, "{ran}");
    assert_eq!(ran["stdout"].as_str().map(str::trim), dir.to_str(), "{ran}");
    assert_eq!(read(&dir.join("made.txt")), "by exec\n");
    assert!(!folder.join("made.txt").exists(), "the project folder is untouched");
    let subject = git(&folder, &["log", "-1", "--format=%s", "conduit/exec-work"]);
    assert_eq!(subject.trim(), "by exec", "the sandboxed command committed on the session's branch");
    assert_eq!(git(&folder, &["status", "--porcelain"]), "");
}
