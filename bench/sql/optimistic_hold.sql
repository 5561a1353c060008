-- $1 checkout, $2 shop, $3 item, $4 location, $5 quantity.
INSERT INTO bench_opt_holds (checkout_id, shop_id, inventory_item_id, location_id, quantity)
VALUES ($1, $2, $3, $4, $5)
