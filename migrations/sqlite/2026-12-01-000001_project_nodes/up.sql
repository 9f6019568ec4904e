-- Cluster mode: the nodes that have a project's folder, one name a line; empty: every node.
ALTER TABLE projects ADD COLUMN nodes TEXT NOT NULL DEFAULT '';
