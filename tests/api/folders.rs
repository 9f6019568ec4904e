//! `GET /api/folders/browse`: listing inside the project root, and every way of trying to
//! list something outside it.

use serde_json::{json, Value};

use crate::helpers::{error_code, spawn_app, TestApp};

/// Browses with `path` sent as a normal (once-encoded) query value, or no path at all.
async fn browse(app: &TestApp, path: Option<&str>) -> reqwest::Response {
    let mut req = app.client.get(app.url("/api/folders/browse"));
    if let Some(p) = path {
        req = req.query(&[("path", p)]);
    }
    req.send().await.expect("request")
}

/// Browses with a query string written by hand, so its percent-encoding is exactly as given.
async fn browse_raw(app: &TestApp, query: &str) -> reqwest::Response {
    app.get(&format!("/api/folders/browse?{query}")).await
}

async fn listing(res: reqwest::Response) -> Value {
    assert_eq!(res.status().as_u16(), 200, "listing");
    res.json().await.expect("listing JSON")
}

fn entry_names(listing: &Value) -> Vec<String> {
    listing["entries"]
        .as_array()
        .expect("entries array")
        .iter()
        .map(|e| e["name"].as_str().expect("entry name").to_string())
        .collect()
}

fn root_str(app: &TestApp) -> String {
    app.root.to_str().expect("utf-8 root").to_string()
}

/// A refusal: 403 `path_outside_root` or a 404, never a listing.
async fn assert_refused(res: reqwest::Response, what: &str) {
    let status = res.status().as_u16();
    assert!(status == 403 || status == 404, "{what}: expected 403 or 404, got {status}");
    let code = error_code(res, status).await;
    let expected = if status == 403 { "path_outside_root" } else { "not_found" };
    assert_eq!(code, expected, "{what}");
}

async fn assert_outside_root(res: reqwest::Response, what: &str) {
    assert_eq!(error_code(res, 403).await, "path_outside_root", "{what}");
}

/// A folder next to the root (outside it) holding something worth stealing.
fn outside_folder(app: &TestApp, name: &str) -> std::path::PathBuf {
    let outside = app.dir.path().join(name);
    std::fs::create_dir_all(outside.join("secret-folder")).expect("mkdir outside");
    std::fs::write(outside.join("secret.txt"), "secret").expect("write secret");
    outside
}

// ---------------------------------------------------------------------------------------------
// Listing
// ---------------------------------------------------------------------------------------------

#[actix_web::test]
async fn default_lists_the_root_with_no_parent() {
    let app = spawn_app().await;
    app.mkdir("one");
    let body = listing(browse(&app, None).await).await;
    assert_eq!(body["path"], root_str(&app).as_str());
    assert_eq!(body["root"], root_str(&app).as_str());
    assert_eq!(body["parent"], Value::Null);
    assert_eq!(entry_names(&body), ["one"]);
    assert_eq!(
        body["entries"][0],
        json!({"name": "one", "path": app.root.join("one").to_str().expect("utf-8"), "hidden": false, "is_project": false})
    );

    // An empty path and "." are the root too.
    for path in ["", ".", "./", &root_str(&app)] {
        let same = listing(browse(&app, Some(path)).await).await;
        assert_eq!(same, body, "path {path:?}");
    }
}

#[actix_web::test]
async fn an_empty_root_has_no_entries() {
    let app = spawn_app().await;
    let body = listing(browse(&app, None).await).await;
    assert_eq!(body["entries"], json!([]));
}

#[actix_web::test]
async fn lists_directories_only_sorted_case_insensitively() {
    let app = spawn_app().await;
    for dir in ["beta", "Alpha", "delta", "Charlie", "_under", "0zero"] {
        app.mkdir(dir);
    }
    for file in ["aardvark.txt", "Bfile", "zzz.md"] {
        std::fs::write(app.root.join(file), "x").expect("write file");
    }
    let body = listing(browse(&app, None).await).await;
    assert_eq!(entry_names(&body), ["0zero", "_under", "Alpha", "beta", "Charlie", "delta"]);
}

#[actix_web::test]
async fn flags_hidden_folders_and_projects() {
    let app = spawn_app().await;
    app.mkdir(".config");
    app.mkdir("with-git/.git");
    app.mkdir("with-claude/.claude");
    app.mkdir("with-claude-md");
    std::fs::write(app.root.join("with-claude-md/CLAUDE.md"), "# notes").expect("write");
    app.mkdir("plain");
    app.mkdir("fake-claude-md/CLAUDE.md"); // a folder named CLAUDE.md is not the marker file

    let body = listing(browse(&app, None).await).await;
    let flags: Vec<(String, bool, bool)> = body["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| {
            (
                e["name"].as_str().expect("name").to_string(),
                e["hidden"].as_bool().expect("hidden"),
                e["is_project"].as_bool().expect("is_project"),
            )
        })
        .collect();
    let expected = [
        (".config", true, false),
        ("fake-claude-md", false, false),
        ("plain", false, false),
        ("with-claude", false, true),
        ("with-claude-md", false, true),
        ("with-git", false, true),
    ];
    let expected: Vec<(String, bool, bool)> = expected.iter().map(|(n, h, p)| (n.to_string(), *h, *p)).collect();
    assert_eq!(flags, expected);
}

#[actix_web::test]
async fn a_sub_folder_lists_with_its_parent() {
    let app = spawn_app().await;
    let sub = app.mkdir("sub");
    app.mkdir("sub/inner/deeper");

    let body = listing(browse(&app, Some("sub")).await).await;
    assert_eq!(body["path"], sub.to_str().expect("utf-8"));
    assert_eq!(body["parent"], root_str(&app).as_str(), "a sub-folder's parent is the root");
    assert_eq!(body["root"], root_str(&app).as_str());
    assert_eq!(entry_names(&body), ["inner"]);

    // Entry paths are ready to pass back as `path`, absolute.
    let inner_path = body["entries"][0]["path"].as_str().expect("path").to_string();
    let inner = listing(browse(&app, Some(&inner_path)).await).await;
    assert_eq!(inner["parent"], sub.to_str().expect("utf-8"));
    assert_eq!(entry_names(&inner), ["deeper"]);

    // `..` that stays inside the root is fine.
    let back = listing(browse(&app, Some("sub/inner/..")).await).await;
    assert_eq!(back["path"], sub.to_str().expect("utf-8"));
}

#[actix_web::test]
async fn a_symlink_to_a_folder_inside_the_root_is_listed_and_browsable() {
    let app = spawn_app().await;
    let target = app.mkdir("real/target");
    app.mkdir("real/target/child");
    std::os::unix::fs::symlink(&target, app.root.join("shortcut")).expect("symlink");

    let body = listing(browse(&app, None).await).await;
    assert_eq!(entry_names(&body), ["real", "shortcut"]);

    let through = listing(browse(&app, Some("shortcut")).await).await;
    assert_eq!(through["path"], target.to_str().expect("utf-8"), "listed by its canonical path");
    assert_eq!(entry_names(&through), ["child"]);
}

// ---------------------------------------------------------------------------------------------
// Traversal: nothing outside the root is ever listed
// ---------------------------------------------------------------------------------------------

#[actix_web::test]
async fn dot_dot_is_refused() {
    let app = spawn_app().await;
    outside_folder(&app, "outside");
    app.mkdir("sub");
    for path in ["..", "../..", "../../..", "sub/../..", "./..", "../outside", "sub/../../outside"] {
        assert_outside_root(browse(&app, Some(path)).await, path).await;
    }
    // Climbing out and back in by name lands in the root again: that is allowed.
    let back = listing(browse(&app, Some("../root/sub/..")).await).await;
    assert_eq!(back["path"], root_str(&app).as_str());
}

#[actix_web::test]
async fn absolute_paths_outside_the_root_are_refused() {
    let app = spawn_app().await;
    let root = root_str(&app);
    let outside = outside_folder(&app, "outside");
    for path in [
        "/".to_string(),
        "/etc".to_string(),
        "/tmp".to_string(),
        format!("{root}/.."),
        format!("{root}/../"),
        format!("{root}/../outside"),
        format!("{root}/./../"),
        outside.to_str().expect("utf-8").to_string(),
    ] {
        assert_outside_root(browse(&app, Some(&path)).await, &path).await;
    }
}

#[actix_web::test]
async fn a_sibling_sharing_the_roots_prefix_is_refused() {
    let app = spawn_app().await;
    let leak = app.dir.path().join("root-leak");
    std::fs::create_dir_all(leak.join("stolen")).expect("mkdir sibling");
    let leak = std::fs::canonicalize(leak).expect("canonical sibling");
    assert!(leak.to_str().expect("utf-8").starts_with(&root_str(&app)), "shares the root's prefix as text");

    for path in
        [leak.to_str().expect("utf-8").to_string(), format!("{}-leak", root_str(&app)), "../root-leak".to_string()]
    {
        assert_outside_root(browse(&app, Some(&path)).await, &path).await;
    }
}

#[actix_web::test]
async fn a_symlink_pointing_outside_is_refused_and_not_listed() {
    let app = spawn_app().await;
    let outside = outside_folder(&app, "outside");
    app.mkdir("visible");
    std::os::unix::fs::symlink(&outside, app.root.join("escape")).expect("symlink dir");
    std::os::unix::fs::symlink("/etc", app.root.join("etc-link")).expect("symlink /etc");
    std::os::unix::fs::symlink(app.dir.path(), app.root.join("up")).expect("symlink parent");
    // A symlink inside a sub-folder, reached relatively.
    app.mkdir("sub");
    std::os::unix::fs::symlink("../../outside", app.root.join("sub/rel-escape")).expect("relative symlink");

    let root_listing = listing(browse(&app, None).await).await;
    assert_eq!(entry_names(&root_listing), ["sub", "visible"], "escaping symlinks are not listed");
    let sub_listing = listing(browse(&app, Some("sub")).await).await;
    assert!(entry_names(&sub_listing).is_empty(), "escaping symlinks are not listed: {sub_listing}");

    for path in ["escape", "escape/secret-folder", "escape/", "etc-link", "up", "up/outside", "sub/rel-escape"] {
        assert_outside_root(browse(&app, Some(path)).await, path).await;
    }
    let absolute = app.root.join("escape");
    assert_outside_root(browse(&app, Some(absolute.to_str().expect("utf-8"))).await, "absolute symlink path").await;
}

#[actix_web::test]
async fn a_dangling_symlink_is_not_listed_and_is_404() {
    let app = spawn_app().await;
    std::os::unix::fs::symlink(app.root.join("gone"), app.root.join("dangling")).expect("symlink");
    let body = listing(browse(&app, None).await).await;
    assert!(entry_names(&body).is_empty(), "{body}");
    assert_eq!(error_code(browse(&app, Some("dangling")).await, 404).await, "not_found");
}

#[actix_web::test]
async fn url_encoded_dot_dot_is_decoded_once_and_refused() {
    let app = spawn_app().await;
    outside_folder(&app, "outside");
    for query in
        ["path=%2e%2e", "path=%2E%2E", "path=.%2e", "path=%2e%2e%2f%2e%2e", "path=%2e%2e/outside", "path=..%2foutside"]
    {
        assert_outside_root(browse_raw(&app, query).await, query).await;
    }
}

#[actix_web::test]
async fn double_encoded_dot_dot_is_a_literal_name() {
    let app = spawn_app().await;
    outside_folder(&app, "outside");
    for query in ["path=%252e%252e", "path=%252e%252e%252f%252e%252e", "path=%252e%252e/outside"] {
        let res = browse_raw(&app, query).await;
        assert_eq!(error_code(res, 404).await, "not_found", "{query}");
    }

    // A real folder by that literal name is listed as itself, inside the root.
    let literal = app.mkdir("%2e%2e");
    app.mkdir("%2e%2e/inside");
    let body = listing(browse_raw(&app, "path=%252e%252e").await).await;
    assert_eq!(body["path"], literal.to_str().expect("utf-8"));
    assert_eq!(entry_names(&body), ["inside"]);
}

#[actix_web::test]
async fn traversal_attempts_are_all_refused() {
    let app = spawn_app().await;
    let outside = outside_folder(&app, "outside");
    std::os::unix::fs::symlink(&outside, app.root.join("escape")).expect("symlink");
    std::fs::create_dir_all(app.dir.path().join("root-leak")).expect("mkdir sibling");
    let root = root_str(&app);

    let encoded = |p: &str| -> String {
        let mut ser = String::new();
        for b in p.bytes() {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                ser.push(b as char);
            } else {
                ser.push_str(&format!("%{b:02X}"));
            }
        }
        format!("path={ser}")
    };
    let attempts = [
        "..".to_string(),
        "../..".to_string(),
        "/etc".to_string(),
        "/etc/passwd".to_string(),
        format!("{root}/../"),
        format!("{root}-leak"),
        "escape".to_string(),
        "escape/secret-folder".to_string(),
        "....//....//".to_string(),
        "..\\..".to_string(),
        "%2e%2e".to_string(),
        "//etc".to_string(),
    ];
    for attempt in &attempts {
        assert_refused(browse(&app, Some(attempt)).await, attempt).await;
        assert_refused(browse_raw(&app, &encoded(attempt)).await, &format!("fully encoded {attempt:?}")).await;
    }
}

// ---------------------------------------------------------------------------------------------
// Bad paths
// ---------------------------------------------------------------------------------------------

#[actix_web::test]
async fn a_nul_byte_is_422() {
    let app = spawn_app().await;
    app.mkdir("a");
    for query in ["path=%00", "path=a%00", "path=a%00/../..", "path=%00.."] {
        let res = browse_raw(&app, query).await;
        assert_eq!(error_code(res, 422).await, "validation_failed", "{query}");
    }
}

#[actix_web::test]
async fn a_file_is_422_not_a_directory() {
    let app = spawn_app().await;
    app.mkdir("dir");
    std::fs::write(app.root.join("dir/notes.txt"), "x").expect("write file");
    let res = browse(&app, Some("dir/notes.txt")).await;
    assert_eq!(error_code(res, 422).await, "not_a_directory");
}

#[actix_web::test]
async fn a_missing_folder_is_404() {
    let app = spawn_app().await;
    std::fs::write(app.root.join("file"), "x").expect("write file");
    for path in ["nope", "nope/deeper", "file/below-a-file"] {
        assert_eq!(error_code(browse(&app, Some(path)).await, 404).await, "not_found", "{path}");
    }
}
