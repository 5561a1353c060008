-- Record the buyer of a reservation's hold (its row was just inserted by
-- this transaction): the keyed hash, never the raw id.
-- $1 shop, $2 checkout, $3 buyer hash.
UPDATE holds SET buyer_hash = $3::bytea
WHERE shop_id = $1::bigint AND checkout_id = $2::uuid
