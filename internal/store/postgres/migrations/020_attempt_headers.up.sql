-- Attempt headers (docs/delivery.md): each attempt keeps the headers it sent (a
-- webhook's request headers, a broker's message headers and properties;
-- secrets redacted) and a webhook's answer's headers (bounded), as JSON
-- objects in text. NULL for attempts logged before: the API shows {}.
-- delivery_attempts is a partitioned parent (019): the columns reach every
-- partition, and nullable columns without a default rewrite none.
ALTER TABLE delivery_attempts ADD COLUMN IF NOT EXISTS request_headers text;
ALTER TABLE delivery_attempts ADD COLUMN IF NOT EXISTS response_headers text;
