-- A project's OS sandbox: off, workspace or strict. NULL: the service's `sandbox` setting.
ALTER TABLE projects ADD COLUMN sandbox TEXT;
