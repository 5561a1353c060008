-- Create a deployment secret unless it exists (autocommit, outside any
-- transaction). ? name, ? secret, ? now (NULL: the database clock).
INSERT IGNORE INTO holdfast_secrets (name, secret, created_at)
VALUES (?, ?, COALESCE(?, UTC_TIMESTAMP(6)))
