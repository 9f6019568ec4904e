-- Every webhook delivery attempt: one row per try, grouped by delivery_id (the
-- X-Conduit-Delivery header). Kept for 7 days.
CREATE TABLE webhook_deliveries (
    id           INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    delivery_id  TEXT NOT NULL,
    webhook_id   TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event_type   TEXT NOT NULL,
    attempt      INTEGER NOT NULL,
    status_code  INTEGER,
    duration_ms  BIGINT NOT NULL,
    error        TEXT,
    succeeded    BOOLEAN NOT NULL,
    attempted_at TEXT NOT NULL
);
CREATE INDEX webhook_deliveries_webhook_idx ON webhook_deliveries (webhook_id, id);
CREATE INDEX webhook_deliveries_attempted_idx ON webhook_deliveries (attempted_at);
