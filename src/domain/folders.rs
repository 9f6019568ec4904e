//! Folders on disk: confinement to the project root, browsing, project discovery and
//! project-type detection.
//!
//! Confinement is decided twice, on purpose. First on the lexically normalized path (so a path
//! outside the root is refused without revealing whether it exists), then on the canonical path
//! (so a symlink inside the root that points outside is refused too). Comparison is by path
//! components, so `<root>-leak` is not inside `<root>`.

use std::io::ErrorKind;
use std::path::{Component, Path, PathBuf};

use crate::domain::validate;

#[derive(Debug, PartialEq, Eq)]
pub enum PathError {
    /// The request itself is malformed (NUL byte, not UTF-8, ...).
    Invalid(String),
    OutsideRoot,
    NotFound(String),
    NotADirectory(String),
    /// The service may not read it (file permissions).
    Denied(String),
    Io(String),
}

/// The folder every browse, discovery and project path must stay inside.
#[derive(Debug, Clone)]
pub struct ProjectRoot {
    configured: PathBuf,
}

/// `..` and `.` removed without touching the disk; `..` never climbs above `/`.
pub fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::Prefix(p) => out.push(p.as_os_str()),
            Component::RootDir => out.push("/"),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
        }
    }
    out
}

impl ProjectRoot {
    pub fn new(configured: impl Into<PathBuf>) -> Self {
        let configured = configured.into();
        let absolute = if configured.is_absolute() {
            configured
        } else {
            std::env::current_dir().map(|d| d.join(&configured)).unwrap_or(configured)
        };
        ProjectRoot { configured: normalize_lexically(&absolute) }
    }

    /// The root as configured (absolute, normalized).
    pub fn path(&self) -> &Path {
        &self.configured
    }

    fn canonical(&self) -> Result<PathBuf, PathError> {
        std::fs::canonicalize(&self.configured).map_err(|e| match e.kind() {
            ErrorKind::NotFound => PathError::NotFound(format!(
                "the project root {} does not exist; create it or set CONDUIT_PROJECT_ROOT",
                self.configured.display()
            )),
            _ => PathError::Io(format!("cannot resolve the project root: {e}")),
        })
    }

    /// Resolves a client-supplied path (absolute, or relative to the root; `None` or empty is
    /// the root itself) to a canonical directory inside the root.
    pub fn resolve_dir(&self, raw: Option<&str>) -> Result<PathBuf, PathError> {
        let raw = raw.unwrap_or("").trim_end_matches('\n');
        validate::path("path", raw).map_err(PathError::Invalid)?;
        let canonical_root = self.canonical()?;
        let requested = if raw.is_empty() { self.configured.clone() } else { self.configured.join(raw) };
        let lexical = normalize_lexically(&requested);
        if !lexical.starts_with(&self.configured) && !lexical.starts_with(&canonical_root) {
            return Err(PathError::OutsideRoot);
        }
        // Joined to the root, a path within the limit may still exceed it.
        if lexical.as_os_str().len() > validate::MAX_PATH_BYTES {
            return Err(PathError::Invalid(format!(
                "the path is longer than {} bytes (PATH_MAX) once joined to the project root",
                validate::MAX_PATH_BYTES
            )));
        }
        let canonical = std::fs::canonicalize(&lexical).map_err(|e| match e.kind() {
            ErrorKind::NotFound | ErrorKind::NotADirectory => {
                PathError::NotFound(format!("no folder at {}", lexical.display()))
            }
            ErrorKind::PermissionDenied => {
                PathError::Denied(format!("permission denied reading {}", lexical.display()))
            }
            // What the client asked for cannot be a folder: a name or path too long for the
            // system, or symbolic links that loop. Its fault, not the service's.
            _ if e.raw_os_error() == Some(libc::ENAMETOOLONG) => PathError::Invalid(format!(
                "the path is too long for the file system (at most {} bytes, {} per folder name)",
                validate::MAX_PATH_BYTES,
                validate::MAX_PATH_COMPONENT_BYTES
            )),
            _ if e.raw_os_error() == Some(libc::ELOOP) => {
                PathError::Invalid(format!("{} cannot be resolved: its symbolic links loop", lexical.display()))
            }
            _ => PathError::Io(format!("cannot resolve {}: {e}", lexical.display())),
        })?;
        if !canonical.starts_with(&canonical_root) {
            return Err(PathError::OutsideRoot);
        }
        if !canonical.is_dir() {
            return Err(PathError::NotADirectory(format!("{} is not a directory", canonical.display())));
        }
        if canonical.to_str().is_none() {
            return Err(PathError::Invalid("the path is not valid UTF-8".to_string()));
        }
        Ok(canonical)
    }

    /// True when `dir` (canonical) is the root itself.
    pub fn is_root(&self, dir: &Path) -> bool {
        self.canonical().map(|r| r == dir).unwrap_or(false)
    }

    /// Lists the directories directly inside `dir` (already resolved), sorted by name
    /// (case-insensitive, then exact). Symlinks are listed only when they lead to a directory
    /// inside the root; names that are not UTF-8 are skipped, since JSON cannot carry them.
    pub fn list_dirs(&self, dir: &Path) -> Result<Vec<FolderEntry>, PathError> {
        let canonical_root = self.canonical()?;
        let reader = std::fs::read_dir(dir).map_err(|e| match e.kind() {
            ErrorKind::PermissionDenied => PathError::Denied(format!("permission denied reading {}", dir.display())),
            _ => PathError::Io(format!("cannot read {}: {e}", dir.display())),
        })?;
        let mut entries = Vec::new();
        for entry in reader.flatten() {
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            let path = entry.path();
            let Ok(file_type) = entry.file_type() else {
                continue;
            };
            let is_dir = if file_type.is_symlink() {
                std::fs::canonicalize(&path).map(|t| t.is_dir() && t.starts_with(&canonical_root)).unwrap_or(false)
            } else {
                file_type.is_dir()
            };
            if !is_dir {
                continue;
            }
            let markers = project_markers(&path);
            entries.push(FolderEntry {
                hidden: name.starts_with('.'),
                path: path.to_string_lossy().into_owned(),
                is_project: !markers.is_empty(),
                name,
            });
        }
        entries.sort_by(|a, b| a.name.to_lowercase().cmp(&b.name.to_lowercase()).then_with(|| a.name.cmp(&b.name)));
        Ok(entries)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FolderEntry {
    pub name: String,
    pub path: String,
    pub hidden: bool,
    pub is_project: bool,
}

/// What makes a folder a project: the markers present, in this order.
pub fn project_markers(dir: &Path) -> Vec<&'static str> {
    let mut found = Vec::new();
    if dir.join(".claude").is_dir() {
        found.push(".claude");
    }
    if dir.join("CLAUDE.md").is_file() {
        found.push("CLAUDE.md");
    }
    // A worktree's `.git` is a file, a clone's a folder: both count.
    if dir.join(".git").exists() {
        found.push(".git");
    }
    found
}

/// The project type from marker files, first match wins.
pub fn project_type(dir: &Path) -> &'static str {
    const MARKERS: [(&str, &str); 6] = [
        ("Cargo.toml", "rust"),
        ("package.json", "node"),
        ("pyproject.toml", "python"),
        ("requirements.txt", "python"),
        ("go.mod", "go"),
        ("pom.xml", "java"),
    ];
    MARKERS.iter().find(|(file, _)| dir.join(file).is_file()).map(|(_, kind)| *kind).unwrap_or("generic")
}

/// A `.claude/` folder in the project, or transcripts the CLI keeps for it under
/// `$HOME/.claude/projects/<the path with separators turned into '-'>`.
pub fn has_claude_history(dir: &Path, home: Option<&Path>) -> bool {
    if dir.join(".claude").is_dir() {
        return true;
    }
    let Some(home) = home else { return false };
    let text = dir.to_string_lossy();
    let slashes: String = text.chars().map(|c| if c == '/' { '-' } else { c }).collect();
    let all: String = text.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '-' }).collect();
    let projects = home.join(".claude").join("projects");
    projects.join(slashes).is_dir() || projects.join(all).is_dir()
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovered {
    pub folder_path: String,
    pub name: String,
    pub project_type: &'static str,
    pub markers: Vec<&'static str>,
    pub has_claude_history: bool,
}

/// Folders never worth descending into while looking for projects.
const SKIPPED: [&str; 5] = ["node_modules", "target", "vendor", "__pycache__", "dist"];

/// Finds project folders in `start` (already resolved) and up to `depth` levels below it.
/// A project folder is reported and not descended into; hidden folders, dependency folders
/// and symlinks are not followed (no loops, no escaping the root). Sorted by path.
pub fn discover(start: &Path, depth: u32, home: Option<&Path>) -> Vec<Discovered> {
    let mut found = Vec::new();
    let mut frontier = vec![start.to_path_buf()];
    for level in 0..=depth {
        let mut next = Vec::new();
        for dir in frontier {
            let markers = project_markers(&dir);
            if !markers.is_empty() {
                found.push(Discovered {
                    folder_path: dir.to_string_lossy().into_owned(),
                    name: dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "/".to_string()),
                    project_type: project_type(&dir),
                    has_claude_history: has_claude_history(&dir, home),
                    markers,
                });
                continue;
            }
            if level == depth {
                continue;
            }
            let Ok(reader) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in reader.flatten() {
                let name = entry.file_name();
                let name = name.to_string_lossy();
                let is_real_dir = entry.file_type().map(|t| t.is_dir()).unwrap_or(false);
                if is_real_dir && !name.starts_with('.') && !SKIPPED.contains(&name.as_ref()) {
                    next.push(entry.path());
                }
            }
        }
        frontier = next;
    }
    found.sort_by(|a, b| a.folder_path.cmp(&b.folder_path));
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::validate::clip;
    use std::fs;

    fn tree() -> (tempfile::TempDir, ProjectRoot) {
        let base = tempfile::tempdir().expect("tempdir");
        let root = base.path().join("root");
        fs::create_dir_all(root.join("a/b/c")).expect("mkdir");
        fs::create_dir_all(root.join(".hidden")).expect("mkdir");
        fs::create_dir_all(base.path().join("root-leak")).expect("mkdir");
        fs::write(root.join("file.txt"), "x").expect("write");
        let pr = ProjectRoot::new(&root);
        (base, pr)
    }

    #[test]
    fn resolves_inside_and_refuses_outside() {
        let (base, root) = tree();
        let canonical_root = fs::canonicalize(base.path().join("root")).expect("canon");
        assert_eq!(root.resolve_dir(None), Ok(canonical_root.clone()));
        assert_eq!(root.resolve_dir(Some("a/b")), Ok(canonical_root.join("a/b")));
        assert_eq!(root.resolve_dir(Some("a/../a/b/..")), Ok(canonical_root.join("a")));
        assert_eq!(root.resolve_dir(Some("..")), Err(PathError::OutsideRoot));
        assert_eq!(root.resolve_dir(Some("../root-leak")), Err(PathError::OutsideRoot));
        let leak = base.path().join("root-leak");
        assert_eq!(root.resolve_dir(Some(leak.to_str().expect("utf8"))), Err(PathError::OutsideRoot));
        assert_eq!(root.resolve_dir(Some("/etc")), Err(PathError::OutsideRoot));
        assert!(matches!(root.resolve_dir(Some("nope")), Err(PathError::NotFound(_))));
        assert!(matches!(root.resolve_dir(Some("file.txt")), Err(PathError::NotADirectory(_))));
        assert!(matches!(root.resolve_dir(Some("a\0b")), Err(PathError::Invalid(_))));
        // A folder literally named "%2e%2e" is just a name: never decoded twice.
        assert!(matches!(root.resolve_dir(Some("%2e%2e")), Err(PathError::NotFound(_))));
    }

    /// Issue 13: a 100,000-character path, a folder name over NAME_MAX or a symlink loop
    /// made canonicalize fail with an I/O error, answered as a 500.
    #[test]
    fn paths_the_system_cannot_resolve_are_invalid_not_io_errors() {
        let (base, root) = tree();
        for raw in ["a".repeat(100_000), format!("a/{}", "b".repeat(300)), "a/".repeat(2100)] {
            assert!(matches!(root.resolve_dir(Some(&raw)), Err(PathError::Invalid(_))), "{}", clip(&raw, 20));
        }
        // Within PATH_MAX, but not once joined to the root.
        let near = "a/".repeat(2040);
        assert!(near.len() <= validate::MAX_PATH_BYTES);
        assert!(matches!(root.resolve_dir(Some(&near)), Err(PathError::Invalid(_))));
        let r = base.path().join("root");
        std::os::unix::fs::symlink("loop", r.join("loop")).expect("symlink");
        let err = root.resolve_dir(Some("loop")).expect_err("a loop");
        assert!(matches!(&err, PathError::Invalid(m) if m.contains("loop")), "{err:?}");
        assert!(matches!(root.resolve_dir(Some("loop/x")), Err(PathError::Invalid(_))));
    }

    #[test]
    fn symlinks_out_of_the_root_are_refused() {
        let (base, root) = tree();
        let r = base.path().join("root");
        std::os::unix::fs::symlink(base.path().join("root-leak"), r.join("out")).expect("symlink");
        std::os::unix::fs::symlink(r.join("a"), r.join("in")).expect("symlink");
        assert_eq!(root.resolve_dir(Some("out")), Err(PathError::OutsideRoot));
        assert!(root.resolve_dir(Some("in")).is_ok());
        let listed: Vec<String> =
            root.list_dirs(&fs::canonicalize(&r).expect("c")).expect("list").into_iter().map(|e| e.name).collect();
        assert_eq!(listed, vec![".hidden", "a", "in"], "dirs only, sorted, escaping symlink left out");
    }

    #[test]
    fn listing_flags_hidden_and_projects() {
        let (base, root) = tree();
        let r = fs::canonicalize(base.path().join("root")).expect("c");
        fs::create_dir_all(r.join("a/.git")).expect("mkdir");
        let entries = root.list_dirs(&r).expect("list");
        assert_eq!(entries[0].name, ".hidden");
        assert!(entries[0].hidden);
        assert!(entries[1].is_project && !entries[1].hidden);
    }

    #[test]
    fn project_types_follow_marker_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path();
        assert_eq!(project_type(p), "generic");
        for (file, kind) in [
            ("pom.xml", "java"),
            ("go.mod", "go"),
            ("requirements.txt", "python"),
            ("package.json", "node"),
            ("Cargo.toml", "rust"),
        ] {
            fs::write(p.join(file), "").expect("write");
            assert_eq!(project_type(p), kind, "{file}");
        }
    }

    #[test]
    fn discovery_respects_depth_and_stops_at_projects() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = fs::canonicalize(dir.path()).expect("c");
        fs::create_dir_all(p.join("one/.git")).expect("mkdir");
        fs::create_dir_all(p.join("one/inner/.git")).expect("mkdir");
        fs::create_dir_all(p.join("x/two/.claude")).expect("mkdir");
        fs::create_dir_all(p.join("x/y/three")).expect("mkdir");
        fs::write(p.join("x/y/three/CLAUDE.md"), "").expect("write");
        fs::create_dir_all(p.join("node_modules/dep/.git")).expect("mkdir");
        fs::write(p.join("x/two/package.json"), "{}").expect("write");

        let names = |d: u32| discover(&p, d, None).into_iter().map(|d| d.name).collect::<Vec<_>>();
        assert_eq!(names(0), Vec::<String>::new());
        assert_eq!(names(1), vec!["one"]);
        assert_eq!(names(2), vec!["one", "two"]);
        assert_eq!(names(3), vec!["one", "two", "three"]);
        let two = discover(&p, 2, None).into_iter().find(|d| d.name == "two").expect("two");
        assert_eq!(two.project_type, "node");
        assert!(two.has_claude_history);
        assert_eq!(two.markers, vec![".claude"]);
    }

    #[test]
    fn claude_history_in_home_is_detected() {
        let home = tempfile::tempdir().expect("home");
        let proj = tempfile::tempdir().expect("proj");
        assert!(!has_claude_history(proj.path(), Some(home.path())));
        let mangled: String = proj.path().to_string_lossy().replace('/', "-");
        fs::create_dir_all(home.path().join(".claude/projects").join(mangled)).expect("mkdir");
        assert!(has_claude_history(proj.path(), Some(home.path())));
    }
}
