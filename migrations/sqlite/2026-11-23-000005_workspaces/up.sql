-- Workspaces: a project's sessions share its folder, or each gets a git worktree of its own.
ALTER TABLE projects ADD COLUMN workspace_mode TEXT NOT NULL DEFAULT 'shared';
-- Paths and globs (relative to the project folder) copied into each new worktree, one a line.
ALTER TABLE projects ADD COLUMN workspace_copy TEXT NOT NULL DEFAULT '';
-- Run with bash in each new worktree before the CLI starts.
ALTER TABLE projects ADD COLUMN setup_script TEXT;

-- What a session got: its mode, and for a worktree its folder, branch, base ref and commit.
ALTER TABLE sessions ADD COLUMN workspace_mode TEXT NOT NULL DEFAULT 'shared';
ALTER TABLE sessions ADD COLUMN worktree_path TEXT;
ALTER TABLE sessions ADD COLUMN branch TEXT;
ALTER TABLE sessions ADD COLUMN base_ref TEXT;
ALTER TABLE sessions ADD COLUMN base_commit TEXT;

-- An agent's runs: in its folder (shared) or each in a fresh worktree.
ALTER TABLE agents ADD COLUMN workspace_mode TEXT NOT NULL DEFAULT 'shared';
