-- End a batch of waits that ran out, and unmark their keys.
-- $1 now (NULL: database clock), $2 batch size.
WITH t AS (
    SELECT coalesce($1::timestamptz, clock_timestamp()) AS now
), b AS (
    SELECT w.shop_id, w.checkout_id FROM waiters w, t
    WHERE w.status = 'waiting' AND w.wait_until <= t.now
      AND NOT EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = w.shop_id OFFSET 0)
      AND pg_try_advisory_xact_lock_shared(1752139015, hashtext(w.shop_id::text)) -- a shop a move is copying: the guard's lock, as in sweep_expire.sql
    ORDER BY w.wait_until
    LIMIT $2::int
), e AS (
    UPDATE waiters w SET status = 'expired', ended_at = t.now
    FROM b, t
    WHERE w.shop_id = b.shop_id AND w.checkout_id = b.checkout_id AND w.status = 'waiting'
    RETURNING w.shop_id, w.checkout_id, w.lines
), d AS (
    DELETE FROM waiter_lines l USING e
    WHERE l.shop_id = e.shop_id AND l.checkout_id = e.checkout_id
    RETURNING 1
)
SELECT shop_id, checkout_id, lines, (SELECT count(*) FROM d) FROM e
