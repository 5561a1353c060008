-- Take a shop's bundle lock row (creating it): SetBundle's definitions of
-- one shop are checked and written one at a time. ? shop.
INSERT INTO bundle_shops (shop_id) VALUES (?)
ON DUPLICATE KEY UPDATE version = version + 1
