-- A deployment secret, created with $2 when missing. No row: another engine
-- created it concurrently (this statement's snapshot cannot see it); run
-- again. $1 name, $2 fresh secret.
WITH ins AS (
    INSERT INTO holdfast_secrets (name, secret) VALUES ($1::text, $2::bytea)
    ON CONFLICT (name) DO NOTHING
    RETURNING secret
)
SELECT secret FROM ins
UNION ALL
SELECT secret FROM holdfast_secrets WHERE name = $1::text
LIMIT 1
