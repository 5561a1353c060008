-- A key's safety stock, under its lock row. ? shop, ? item, ? location.
SELECT safety FROM inventory_levels WHERE shop_id = ? AND inventory_item_id = ? AND location_id = ?
