-- One batch of committed, unsequenced events in id order (a consistent,
-- non-locking read: uncommitted events are not waited for, they are
-- sequenced by a later pass). ? batch size.
SELECT id, shop_id, type, cart, inventory_item_id, location_id
FROM holdfast_events
WHERE seq IS NULL
ORDER BY id
LIMIT ?
