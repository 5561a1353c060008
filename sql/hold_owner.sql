-- The shop that owns a checkout id, if any. $1 checkout.
SELECT shop_id FROM holds WHERE checkout_id = $1::uuid
