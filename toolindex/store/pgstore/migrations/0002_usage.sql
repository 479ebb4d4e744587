-- The gateway's usage log (searches, calls, feedback: gateway.UsageRecord as JSON), one row
-- a record, from every replica.
CREATE TABLE usage_log (
	id       bigserial PRIMARY KEY,
	at       timestamptz NOT NULL,
	kind     text NOT NULL,
	record   jsonb NOT NULL,
	replica  text NOT NULL
);
CREATE INDEX usage_log_at ON usage_log (at);
