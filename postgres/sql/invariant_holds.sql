-- Structural checks between holds and their lines; each row is a defect.
SELECT 'line without a held checkout' AS problem, r.checkout_id
FROM reserved_quantities r
LEFT JOIN holds h ON h.shop_id = r.shop_id AND h.checkout_id = r.checkout_id
WHERE h.checkout_id IS NULL OR h.status <> 'held'
UNION ALL
SELECT 'held checkout whose lines differ from its record', h.checkout_id
FROM holds h
WHERE h.status = 'held'
  AND (SELECT coalesce(sum(quantity), 0) FROM reserved_quantities r
        WHERE r.shop_id = h.shop_id AND r.checkout_id = h.checkout_id)
   <> (SELECT coalesce(sum((e->>'quantity')::int), 0) FROM jsonb_array_elements(h.lines) e)
