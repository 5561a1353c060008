-- Take a shop's bundle lock row (creating it): SetBundle's definitions of
-- one shop are checked and written one at a time. $1 shop.
INSERT INTO bundle_shops (shop_id) VALUES ($1::bigint)
ON CONFLICT (shop_id) DO UPDATE SET version = bundle_shops.version + 1
