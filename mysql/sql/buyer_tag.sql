-- Record the buyer of a hold this transaction just created: the keyed hash,
-- never the raw id. ? hash, ? shop, ? checkout.
UPDATE holds SET buyer_hash = ? WHERE shop_id = ? AND checkout_id = ?
