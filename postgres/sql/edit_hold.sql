-- Give a held checkout its edited lines and revision, and its new expiry
-- when the edit asks for one (now + ttl, capped by the deadline); keep the
-- edit's ttl, which a retry of the revision must match (edit_ttl.sql). The
-- caller holds the row (hold_lock.sql). Returns whether the hold is past
-- its expiry still (an edit that kept the expiry of a lapsed hold).
-- $1 checkout, $2 shop, $3 lines json, $4 revision, $5 ttl µs (0: keep the
-- expiry), $6 now (NULL: database clock).
UPDATE holds
SET lines = $3::jsonb,
    revision = $4::bigint,
    edit_ttl = $5::bigint,
    expires_at = CASE WHEN $5::bigint > 0
                      THEN least(t.now + $5::bigint * interval '1 microsecond', deadline)
                      ELSE expires_at END
FROM (SELECT coalesce($6::timestamptz, clock_timestamp()) AS now) t
WHERE checkout_id = $1::uuid AND shop_id = $2::bigint AND status = 'held'
RETURNING created_at, expires_at, deadline, expires_at < t.now
