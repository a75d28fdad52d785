-- Attempt headers (docs/delivery.md): each attempt keeps the headers it sent (a
-- webhook's request headers, a broker's message headers and properties;
-- secrets redacted) and a webhook's answer's headers (bounded), as JSON
-- objects in text. NULL for attempts logged before: the API shows {}.
ALTER TABLE delivery_attempts ADD COLUMN request_headers TEXT;
ALTER TABLE delivery_attempts ADD COLUMN response_headers TEXT;
