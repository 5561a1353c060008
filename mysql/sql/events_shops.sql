-- The last cursor of each shop of a batch. ? shops (JSON array).
SELECT s.shop_id, s.last_seq
FROM JSON_TABLE(?, '$[*]' COLUMNS (shop BIGINT PATH '$')) j
STRAIGHT_JOIN holdfast_event_shops s ON s.shop_id = j.shop
