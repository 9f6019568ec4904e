DROP TABLE usage_hourly;
DROP TABLE usage_ledger;
