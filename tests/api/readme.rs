//! The README's curl examples work as written: the block is taken from README.md itself and run
//! with bash against a live service (only the address is swapped for the test's random port,
//! and HOME is the test's project root).

use crate::helpers::spawn_app;

fn readme_examples() -> String {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).expect("README.md");
    let start = readme.find("Examples, against a service").expect("the README has an examples block");
    let block = &readme[start..];
    let open = block.find("```sh\n").expect("examples open with ```sh") + "```sh\n".len();
    let close = block[open..].find("```").expect("examples block closes");
    block[open..open + close].to_string()
}

#[actix_web::test]
async fn the_readme_curl_examples_work_as_written() {
    let app = spawn_app().await;
    let script = readme_examples().replace("http://127.0.0.1:3100", &app.address);
    assert!(!script.contains(":3100"), "every example goes through the swapped address");

    let output = tokio::process::Command::new("bash")
        .args(["-euo", "pipefail", "-c", &script])
        .env("HOME", &app.root)
        .output()
        .await
        .expect("bash runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "examples failed:\n{stdout}\n{}", String::from_utf8_lossy(&output.stderr));

    let demo = app.root.join("conduit-demo").display().to_string();
    for expected in [
        "\"status\":\"degraded\"".to_string(),
        format!("\"folder_path\":\"{demo}\""),
        "\"name\":\"Demo\"".to_string(),
        "\"default_permission_mode\":\"acceptEdits\"".to_string(),
        "\"description\":\"a demo\"".to_string(),
        "\"max_sessions\":3".to_string(),
        "204".to_string(),
        format!("\"path\":\"{demo}\""),
    ] {
        assert!(stdout.contains(&expected), "README output lacks {expected}:\n{stdout}");
    }
}
