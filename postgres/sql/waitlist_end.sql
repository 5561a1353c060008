-- End one wait that is still waiting — granted (held), cancelled by a
-- release, unservable — and unmark its keys. Returns its cart's lines; no
-- row when it was not waiting (ended meanwhile: the row lock orders a
-- grant and a cancel). $1 shop, $2 checkout, $3 new status, $4 now (NULL:
-- database clock).
WITH e AS (
    UPDATE waiters SET status = $3::text, ended_at = coalesce($4::timestamptz, clock_timestamp())
    WHERE shop_id = $1::bigint AND checkout_id = $2::uuid AND status = 'waiting'
    RETURNING shop_id, checkout_id, lines
), d AS (
    DELETE FROM waiter_lines l USING e
    WHERE l.shop_id = e.shop_id AND l.checkout_id = e.checkout_id
    RETURNING 1
)
SELECT lines FROM e
