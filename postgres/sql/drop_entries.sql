-- A drop's entrants in entry order, with their carts and whether their
-- wait still stands (waiting, and not queued yet). $1 shop, $2 item, $3
-- location.
SELECT e.checkout_id, e.buyer_hash, coalesce(w.lines, '[]'::jsonb), coalesce(w.ttl_us, 0),
       e.wait_us, coalesce(w.short, '[]'::jsonb),
       coalesce(w.status = 'waiting', false)
         AND NOT EXISTS (SELECT 1 FROM waiter_lines l
                         WHERE l.shop_id = e.shop_id AND l.checkout_id = e.checkout_id)
FROM drop_entries e
LEFT JOIN waiters w ON w.shop_id = e.shop_id AND w.checkout_id = e.checkout_id
WHERE e.shop_id = $1::bigint AND e.inventory_item_id = $2::bigint AND e.location_id = $3::bigint
ORDER BY e.entry_seq
