-- Fold keys' per-backend held_counts rows into their stripe 0, so a key
-- keeps a few rows however many connections have touched it. Moves amounts
-- between rows of one key in one statement: the key's sum, in any snapshot,
-- is unchanged. Rows a transaction holds (a reservation in flight) are
-- skipped, so this never waits on a reserver; stripe 0 is written only here,
-- under the keys' advisory locks (the caller holds them), so it never
-- waits on another fold either. $1 shops, $2 items, $3 locations.
WITH k AS (
    SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS k(shop_id, item, location)
), mine AS (
    SELECT c.ctid AS row_id
    FROM held_counts c
    JOIN k ON c.shop_id = k.shop_id AND c.inventory_item_id = k.item AND c.location_id = k.location
    WHERE c.stripe <> 0
      AND NOT EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = c.shop_id)
      AND pg_try_advisory_xact_lock_shared(1752139015, hashtext(c.shop_id::text)) -- a shop a move is copying: the guard's lock, as in sweep_expire.sql
    FOR UPDATE OF c SKIP LOCKED
), d AS (
    DELETE FROM held_counts c USING mine
    WHERE c.ctid = mine.row_id
    RETURNING c.shop_id, c.inventory_item_id, c.location_id, c.held
)
INSERT INTO held_counts AS c (shop_id, inventory_item_id, location_id, stripe, held)
SELECT shop_id, inventory_item_id, location_id, 0, sum(held)
FROM d
GROUP BY 1, 2, 3
ORDER BY 1, 2, 3
ON CONFLICT (shop_id, inventory_item_id, location_id, stripe)
DO UPDATE SET held = c.held + EXCLUDED.held
