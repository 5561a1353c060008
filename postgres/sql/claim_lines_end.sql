-- End a held checkout as claimed by a partial claim: its lines become the
-- claimed ones, and the rest, given back in the same transaction, is kept
-- as released so a retry answers the same. The caller holds the row
-- (hold_lock.sql). $1 checkout, $2 shop, $3 claimed lines json,
-- $4 released lines json (NULL: none), $5 now (NULL: database clock).
UPDATE holds
SET status = 'claimed', lines = $3::jsonb, released = $4::jsonb,
    ended_at = coalesce($5::timestamptz, clock_timestamp())
WHERE checkout_id = $1::uuid AND shop_id = $2::bigint AND status = 'held'
RETURNING created_at, expires_at, deadline, ended_at, revision
