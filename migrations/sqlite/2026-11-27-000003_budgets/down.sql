ALTER TABLE agents DROP COLUMN max_budget_usd;
ALTER TABLE sessions DROP COLUMN max_budget_usd;
ALTER TABLE projects DROP COLUMN budget_monthly_usd;
ALTER TABLE projects DROP COLUMN budget_daily_usd;
