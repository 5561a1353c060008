-- Expire the picked holds. ? now, ? picked as JSON [[shop, checkout hex], …].
UPDATE holds h
JOIN JSON_TABLE(?, '$[*]' COLUMNS (
         shop BIGINT     PATH '$[0]',
         id   VARCHAR(32) PATH '$[1]')) j
  ON h.shop_id = j.shop AND h.checkout_id = UNHEX(j.id)
SET h.status = 'expired', h.ended_at = COALESCE(?, UTC_TIMESTAMP(6))
WHERE h.status = 'held'
