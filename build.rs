//! Builds the dashboard (`ui/`, React + Vite) and embeds `ui/dist` in the binary, so
//! `cargo run --release` alone gives a working dashboard.
//!
//! npm runs only when the UI's inputs changed since `ui/dist` was built: a content hash of
//! every input is kept next to the build (`ui/dist/.conduit-ui-stamp`), so a build script that
//! runs again for any other reason, or a fresh target directory, reuses `ui/dist` as it is.
//! Then it runs `npm ci` when `ui/node_modules` is missing or older than
//! `ui/package-lock.json`, and `npm run build`. Without npm, or when that build fails, it warns
//! and embeds nothing: the service still builds and runs, and `/` says how to build the
//! dashboard. `CONDUIT_SKIP_UI_BUILD=1` embeds whatever `ui/dist` holds without running npm.
//!
//! Nothing this script or npm writes may be among the watched inputs (the generated API types
//! go to `ui/generated/`, outside `ui/src`): cargo compares the inputs with the time the script
//! started, so a file written during the build would make every later build run it again and
//! recompile the crate.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What, under `ui/`, the built app depends on (never node_modules, generated or dist: they
/// are outputs).
const UI_INPUTS: &[&str] = &[
    "src",
    "index.html",
    "package.json",
    "package-lock.json",
    "vite.config.ts",
    "tsconfig.json",
    "openapi.json",
    "scripts",
];

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let ui = manifest.join("ui");
    for input in UI_INPUTS {
        println!("cargo:rerun-if-changed=ui/{input}");
    }
    println!("cargo:rerun-if-env-changed=CONDUIT_SKIP_UI_BUILD");

    let built = if std::env::var_os("CONDUIT_SKIP_UI_BUILD").is_some_and(|v| v == "1") {
        ui.join("dist/index.html").is_file()
    } else {
        match build_ui(&ui) {
            Ok(()) => true,
            Err(why) => {
                println!("cargo:warning=the dashboard was not built ({why}); / will explain how to build it");
                false
            }
        }
    };
    let mut files = Vec::new();
    if built {
        collect(&ui.join("dist"), &ui.join("dist"), &mut files);
    }
    files.retain(|(name, _)| name != STAMP);
    files.sort();
    let mut code =
        String::from("/// The built dashboard: (path under dist/, contents). Empty when it was not built.\n");
    code.push_str("pub static ASSETS: &[(&str, &[u8])] = &[\n");
    for (name, path) in &files {
        writeln!(code, "    ({name:?}, include_bytes!({:?})),", path.display().to_string()).expect("write to a String");
    }
    code.push_str("];\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("ui_assets.rs");
    // Rewritten only when it changes, like every generated file.
    if std::fs::read_to_string(&out).ok().as_deref() != Some(code.as_str()) {
        std::fs::write(out, code).expect("write ui_assets.rs");
    }
}

/// Where the hash of the inputs `ui/dist` was built from is kept (inside dist: a failed or
/// partial build, which empties dist first, leaves no stamp behind). Never embedded.
const STAMP: &str = ".conduit-ui-stamp";

fn build_ui(ui: &Path) -> Result<(), String> {
    let inputs = inputs_hash(ui);
    let stamp = ui.join("dist").join(STAMP);
    let built_from = std::fs::read_to_string(&stamp).ok();
    if ui.join("dist/index.html").is_file() && built_from.as_deref() == Some(inputs.as_str()) {
        println!("conduit-ui: ui/dist is up to date with its inputs ({inputs}); npm not run");
        return Ok(());
    }
    let _ = std::fs::remove_file(&stamp);
    npm_build(ui)?;
    std::fs::write(&stamp, &inputs).map_err(|e| format!("cannot write {}: {e}", stamp.display()))
}

/// A hash of every UI input's relative path and contents (FNV-1a, 64 bits: stable across
/// toolchains, which std's hasher is not promised to be).
fn inputs_hash(ui: &Path) -> String {
    let mut files = Vec::new();
    for input in UI_INPUTS {
        let path = ui.join(input);
        if path.is_dir() {
            collect(ui, &path, &mut files);
        } else if path.is_file() {
            files.push((input.to_string(), path));
        }
    }
    files.sort();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for b in bytes {
            hash ^= u64::from(*b);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    };
    feed(b"conduit-ui-stamp-v1");
    for (name, path) in &files {
        let contents = std::fs::read(path).unwrap_or_default();
        feed(name.as_bytes());
        feed(&[0]);
        feed(&(contents.len() as u64).to_le_bytes());
        feed(&contents);
    }
    format!("{hash:016x} {} files", files.len())
}

fn npm_build(ui: &Path) -> Result<(), String> {
    match Command::new("npm").arg("--version").output() {
        Ok(o) if o.status.success() => {}
        _ => return Err("npm was not found; install Node.js 20+ with npm and build again".to_string()),
    }
    let stamp = ui.join("node_modules/.package-lock.json");
    let stale = match (modified(&stamp), modified(&ui.join("package-lock.json"))) {
        (Some(installed), Some(lock)) => lock > installed,
        _ => true,
    };
    if stale {
        run(ui, &["ci", "--no-audit", "--no-fund", "--loglevel=error"])?;
    }
    run(ui, &["run", "build"])
}

fn run(ui: &Path, args: &[&str]) -> Result<(), String> {
    let output = Command::new("npm")
        .args(args)
        .current_dir(ui)
        .output()
        .map_err(|e| format!("npm {} could not start: {e}", args.join(" ")))?;
    if output.status.success() {
        return Ok(());
    }
    // Cargo shows warnings one line at a time: pass on the tail of npm's own explanation.
    let text = String::from_utf8_lossy(&output.stderr).into_owned() + &String::from_utf8_lossy(&output.stdout);
    for line in text.lines().filter(|l| !l.trim().is_empty()).rev().take(15).collect::<Vec<_>>().into_iter().rev() {
        println!("cargo:warning=  {line}");
    }
    Err(format!("npm {} failed", args.join(" ")))
}

fn modified(path: &Path) -> Option<std::time::SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

fn collect(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(root, &path, out);
        } else if let Ok(rel) = path.strip_prefix(root) {
            let name = rel.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/");
            out.push((name, path));
        }
    }
}
