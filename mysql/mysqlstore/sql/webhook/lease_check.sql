-- An endpoint's lease token, locked for the deliverer's write that
-- follows in the transaction: the write takes effect only when the token is
-- the deliverer's (no row, or another token: a later lease has the
-- endpoint, or it was removed). ? shop, id.
SELECT lease_token FROM webhook_endpoints WHERE shop_id = ? AND id = ? FOR UPDATE
