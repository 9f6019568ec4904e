//! Issue 13: every `cargo build` recompiled the crate, because `build.rs` ran `npm run build`,
//! which rewrote a generated file under `ui/src`, a folder the build script watches. A build
//! right after a build, with nothing changed, must run no build script (so no npm) and compile
//! nothing of this crate.
//!
//! It runs `cargo build -v` twice in the target directory this test binary was built in, with
//! the profile it was built with: the first settles whatever the test build left out (the
//! examples), the second must find the crate `Fresh`. Nothing here measures time.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The target directory and the profile (`release` or `debug`) this binary was built with:
/// it sits in `<target>/<profile>/deps/`.
fn target_and_profile() -> (PathBuf, String) {
    let exe = std::env::current_exe().expect("current exe");
    let profile_dir = exe.parent().and_then(Path::parent).expect("the test binary is in <target>/<profile>/deps");
    let profile = profile_dir.file_name().expect("profile dir").to_string_lossy().into_owned();
    let mut target = profile_dir.parent().expect("target dir").to_path_buf();
    // With `--target <triple>` the layout is <target>/<triple>/<profile>.
    if !target.join("CACHEDIR.TAG").exists() {
        if let Some(up) = target.parent().filter(|up| up.join("CACHEDIR.TAG").exists()) {
            target = up.to_path_buf();
        }
    }
    (target, profile)
}

fn cargo_build(target: &Path, profile: &str) -> String {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command.arg("build").arg("-v").arg("--examples").arg("--target-dir").arg(target);
    match profile {
        "debug" => {}
        "release" => {
            command.arg("--release");
        }
        other => {
            command.args(["--profile", other]);
        }
    }
    // Cargo gives a test the variables it gives a crate (CARGO_MANIFEST_DIR, CARGO_PKG_*, ...).
    // Some build scripts watch those (`ring` watches CARGO_MANIFEST_DIR), so passing them on
    // would make this build differ from the developer's and dirty their next one.
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        let set_by_cargo = ["CARGO_PKG_", "CARGO_MANIFEST_", "CARGO_BIN_", "CARGO_CFG_", "CARGO_FEATURE_", "__CARGO"]
            .iter()
            .any(|p| name.starts_with(p))
            || [
                "OUT_DIR",
                "CARGO_CRATE_NAME",
                "CARGO_PRIMARY_PACKAGE",
                "CARGO_TARGET_TMPDIR",
                "CARGO_RUSTC_CURRENT_DIR",
            ]
            .contains(&name.as_ref());
        if set_by_cargo {
            command.env_remove(name.as_ref());
        }
    }
    let output = command.current_dir(env!("CARGO_MANIFEST_DIR")).output().expect("cargo runs");
    let log = String::from_utf8_lossy(&output.stderr).into_owned() + &String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "cargo build failed:\n{log}");
    log
}

#[test]
fn a_second_build_with_nothing_changed_runs_no_build_script_and_no_npm() {
    let (target, profile) = target_and_profile();
    cargo_build(&target, &profile);
    let log = cargo_build(&target, &profile);

    assert!(
        log.lines().any(|l| l.trim_start().starts_with("Fresh conduit v")),
        "the crate is not reported fresh on the second build:\n{log}"
    );
    // Nothing at all is redone: no unit dirty, compiled or build script run.
    let redone: Vec<&str> = log
        .lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with("Dirty") || l.starts_with("Compiling") || l.contains("build-script-build"))
        .collect();
    assert!(redone.is_empty(), "the second build redid work:\n{}\n\nfull log:\n{log}", redone.join("\n"));
    assert!(!log.contains("npm"), "the second build ran npm:\n{log}");
}
