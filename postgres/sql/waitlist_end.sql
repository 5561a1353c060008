-- End one wait that is still waiting — granted (held), cancelled by a
-- release, unservable, expired — and unmark its keys. A wait past its
-- wait_until ends as expired whatever $3 asks (its outcome is decided:
-- a read already answered it expired). Returns its cart's lines and the
-- status it ended with; no row when it was not waiting (ended meanwhile:
-- the row lock orders a grant and a cancel). $1 shop, $2 checkout, $3 new
-- status, $4 now (NULL: database clock).
WITH t AS (
    SELECT coalesce($4::timestamptz, clock_timestamp()) AS now
), e AS (
    UPDATE waiters w
    SET status = CASE WHEN w.wait_until <= t.now THEN 'expired' ELSE $3::text END,
        ended_at = t.now
    FROM t
    WHERE w.shop_id = $1::bigint AND w.checkout_id = $2::uuid AND w.status = 'waiting'
    RETURNING w.shop_id, w.checkout_id, w.lines, w.status
), d AS (
    DELETE FROM waiter_lines l USING e
    WHERE l.shop_id = e.shop_id AND l.checkout_id = e.checkout_id
    RETURNING 1
)
SELECT lines, status FROM e
