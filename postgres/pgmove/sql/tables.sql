-- The tables holding shops' rows (a shop_id column), partitioned ones at
-- their root, with their columns in order (generated ones left out: they
-- are computed again on insert) and whether the primary key includes
-- shop_id: only such tables can take another pod's rows of a shop without
-- colliding with this pod's own ids. api_keys (global, looked up before
-- the shop is known) and the fences themselves are not a shop's data.
SELECT c.relname,
       array_agg(a.attname::text ORDER BY a.attnum) FILTER (WHERE a.attgenerated = ''),
       EXISTS (SELECT 1 FROM pg_index x
               JOIN pg_attribute k ON k.attrelid = x.indrelid AND k.attnum = ANY (x.indkey)
               WHERE x.indrelid = c.oid AND x.indisprimary AND k.attname = 'shop_id'),
       array_agg(a.attname::text ORDER BY a.attnum)
           FILTER (WHERE pg_get_serial_sequence(quote_ident(c.relname), a.attname) IS NOT NULL)
FROM pg_class c
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
WHERE c.relnamespace = current_schema()::regnamespace
  AND c.relkind IN ('r', 'p') AND NOT c.relispartition
  AND c.relname NOT IN ('api_keys', 'holdfast_shop_fences', 'holdfast_move_marks')
  AND EXISTS (SELECT 1 FROM pg_attribute s WHERE s.attrelid = c.oid AND s.attname = 'shop_id' AND NOT s.attisdropped)
GROUP BY c.oid, c.relname
ORDER BY c.relname
