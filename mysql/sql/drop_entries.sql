-- A drop's entrants, with their carts and whether their wait still stands
-- (waiting, and not queued yet). ? shop, ? item, ? location.
SELECT e.checkout_id, e.buyer_hash, COALESCE(w.cart, JSON_ARRAY()), COALESCE(w.ttl_us, 0),
       e.wait_us, COALESCE(w.short, JSON_ARRAY()),
       COALESCE(w.status = 'waiting', FALSE)
         AND NOT EXISTS (SELECT 1 FROM waiter_lines l
                         WHERE l.shop_id = e.shop_id AND l.checkout_id = e.checkout_id)
FROM drop_entries e
LEFT JOIN waiters w ON w.shop_id = e.shop_id AND w.checkout_id = e.checkout_id
WHERE e.shop_id = ? AND e.inventory_item_id = ? AND e.location_id = ?
ORDER BY e.buyer_hash
