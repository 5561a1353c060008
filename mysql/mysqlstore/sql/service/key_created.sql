-- The creation time of the key just inserted (same transaction).
-- ? id
SELECT created_at FROM api_keys WHERE id = ?
