//! Workspace settings through the API, without a CLI: `worktree` mode needs a git repository,
//! the default follows the folder, and bad input is refused with the usual errors.

use serde_json::{json, Value};

use crate::helpers::{error_code, spawn_app, spawn_app_with};
use crate::workspaces_real::repo;

#[actix_web::test]
async fn worktree_mode_needs_a_git_repository_and_git_projects_default_to_it() {
    let app = spawn_app().await;
    let plain = app.mkdir("plain");
    let res =
        app.post_json("/api/projects", &json!({"name": "p", "folder_path": plain, "workspace_mode": "worktree"})).await;
    assert_eq!(error_code(res, 422).await, "not_a_git_repository");

    // An empty `.git` folder is not a repository: shared by default.
    app.mkdir("fake/.git");
    let res = app.post_json("/api/projects", &json!({"name": "f", "folder_path": app.root.join("fake")})).await;
    assert_eq!(res.status().as_u16(), 201);
    let fake: Value = res.json().await.expect("json");
    assert_eq!(fake["workspace_mode"], "shared");
    assert_eq!(fake["workspace_copy"], json!([]));

    let git_folder = app.root.join("real");
    repo(&git_folder, &[("a.txt", "a\n")]);
    let res = app.post_json("/api/projects/import", &json!({"folder_path": git_folder})).await;
    assert_eq!(res.status().as_u16(), 201);
    let real: Value = res.json().await.expect("json");
    assert_eq!(real["workspace_mode"], "worktree");
    let res = app
        .post_json(
            "/api/projects",
            &json!({"name": "sub", "folder_path": app.mkdir("real/sub"), "workspace_mode": "worktree"}),
        )
        .await;
    assert_eq!(error_code(res, 422).await, "not_a_git_repository", "a subfolder is not a repository's top");

    // Switching an existing shared project to worktree checks its folder too.
    let res = app
        .put_json(
            &format!("/api/projects/{}", fake["id"].as_str().expect("id")),
            &json!({"workspace_mode": "worktree"}),
        )
        .await;
    assert_eq!(error_code(res, 422).await, "not_a_git_repository");
    let res = app
        .put_json(&format!("/api/projects/{}", fake["id"].as_str().expect("id")), &json!({"workspace_mode": null}))
        .await;
    assert_eq!(error_code(res, 422).await, "validation_failed");

    // A shared project takes no base_ref; a worktree one wants a commit it knows.
    let res = app
        .post_json(
            &format!("/api/projects/{}/sessions", fake["id"].as_str().expect("id")),
            &json!({"base_ref": "main"}),
        )
        .await;
    assert_eq!(error_code(res, 422).await, "validation_failed");
    let real_id = real["id"].as_str().expect("id");
    let res = app.post_json(&format!("/api/projects/{real_id}/sessions"), &json!({"base_ref": "no-such-branch"})).await;
    assert_eq!(error_code(res, 422).await, "unknown_base_ref");
    let res =
        app.post_json(&format!("/api/projects/{real_id}/sessions"), &json!({"base_ref": "--upload-pack=x"})).await;
    assert_eq!(error_code(res, 422).await, "validation_failed");

    // The repository goes away under a worktree project: its launch says why.
    std::fs::remove_dir_all(git_folder.join(".git")).expect("rm .git");
    let res = app.post_json(&format!("/api/projects/{real_id}/sessions"), &json!({})).await;
    assert_eq!(error_code(res, 422).await, "not_a_git_repository");

    // Agents: a worktree agent needs a repository as its folder.
    let res = app
        .post_json("/api/agents", &json!({"name": "a", "objective": "o", "schedule": "0 0 1 1 *", "cwd": plain, "workspace_mode": "worktree"}))
        .await;
    assert_eq!(error_code(res, 422).await, "not_a_git_repository");
}

#[actix_web::test]
async fn bad_workspace_settings_are_refused() {
    let app = spawn_app().await;
    let folder = app.mkdir("x");
    for (body, why) in [
        (json!({"workspace_copy": ["../outside"]}), "leaves the folder"),
        (json!({"workspace_copy": ["/etc/passwd"]}), "absolute"),
        (json!({"workspace_copy": [".git/config"]}), "into .git"),
        (json!({"workspace_copy": ["["]}), "bad glob"),
        (json!({"setup_script": "a\u{0}b"}), "NUL"),
    ] {
        let mut body = body;
        body["name"] = json!("x");
        body["folder_path"] = json!(folder);
        let res = app.post_json("/api/projects", &body).await;
        assert_eq!(error_code(res, 422).await, "validation_failed", "{why}");
    }
    let res =
        app.post_json("/api/projects", &json!({"name": "x", "folder_path": folder, "workspace_mode": "bogus"})).await;
    assert!(res.status().is_client_error());
}

#[actix_web::test]
async fn review_endpoints_answer_404_and_409_for_sessions_without_a_worktree() {
    // A CLI that exits at once: the session is accepted and ends in `error`.
    let app = spawn_app_with(|s| s.cli_path = "false".to_string()).await;
    let project = app.create_project("p", "p").await;
    let id = project["id"].as_str().expect("id");
    // The session shares the folder (and its CLI ends at once).
    let res = app.post_json(&format!("/api/projects/{id}/sessions"), &json!({})).await;
    assert_eq!(res.status().as_u16(), 201);
    let session: Value = res.json().await.expect("json");
    assert_eq!(session["workspace_mode"], "shared");
    let sid = session["id"].as_str().expect("id");
    assert_eq!(error_code(app.get(&format!("/api/sessions/{sid}/diff")).await, 409).await, "workspace_conflict");
    let res = app.post_json(&format!("/api/sessions/{sid}/commit"), &json!({"message": "m"})).await;
    assert_eq!(error_code(res, 409).await, "workspace_conflict");
    let res = app.post_json(&format!("/api/sessions/{sid}/merge"), &json!({"strategy": "sideways"})).await;
    assert!(res.status().is_client_error());
    let res = app.post_json(&format!("/api/sessions/{sid}/commit"), &json!({"message": "  "})).await;
    assert_eq!(error_code(res, 422).await, "validation_failed");
    let missing = "00000000-0000-4000-8000-000000000000";
    assert_eq!(error_code(app.get(&format!("/api/sessions/{missing}/diff")).await, 404).await, "not_found");
    let res = app.get(&format!("/api/sessions/{sid}/diff?limit=0")).await;
    assert_eq!(error_code(res, 422).await, "validation_failed");
}
