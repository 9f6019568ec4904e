-- Budgets: a project's daily and monthly caps in USD (null: none), a session's own cap (given
-- at launch), and a scheduled agent's cap per run.
ALTER TABLE projects ADD COLUMN budget_daily_usd DOUBLE;
ALTER TABLE projects ADD COLUMN budget_monthly_usd DOUBLE;
ALTER TABLE sessions ADD COLUMN max_budget_usd DOUBLE;
ALTER TABLE agents ADD COLUMN max_budget_usd DOUBLE;
