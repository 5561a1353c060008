-- Keep the level an identified stock change answered. $1 shop, $2 id,
-- $3 outcome json.
UPDATE stock_changes SET outcome = $3::jsonb
WHERE shop_id = $1::bigint AND change_id = $2::text
