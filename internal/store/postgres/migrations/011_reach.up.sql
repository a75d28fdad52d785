-- Reach: per-subscription rate limits and broker destinations.
-- rate_limit_per_second 0 is no limit. destination_config holds a broker
-- destination's settings (exchange, routing key, brokers, topic, TLS, SASL
-- mechanism and user) as JSON; its credentials are sealed in secrets.
ALTER TABLE subscriptions ADD COLUMN rate_limit_per_second integer NOT NULL DEFAULT 0;
ALTER TABLE subscriptions ADD COLUMN destination_config text NOT NULL DEFAULT '{}';
