-- A deployment secret. ? name.
SELECT secret FROM holdfast_secrets WHERE name = ?
