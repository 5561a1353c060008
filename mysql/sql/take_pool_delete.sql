-- Delete the pool rows a take locked. ? taken rows as JSON [[item, location,
-- id], …], ? shop. The rows are already locked by this transaction.
DELETE u FROM JSON_TABLE(?, '$[*]' COLUMNS (
         item BIGINT PATH '$[0]',
         loc  BIGINT PATH '$[1]',
         id   BIGINT PATH '$[2]')) j
JOIN reservation_units u
  ON u.shop_id = ? AND u.inventory_item_id = j.item AND u.location_id = j.loc AND u.id = j.id
