-- The newest ids of reserved_quantities (one row per reserved line) and of
-- inventory_ledger (one row per claimed line or adjustment): the marks that
-- bound a window of key activity. Both are read through their primary keys.
SELECT coalesce((SELECT max(id) FROM reserved_quantities), 0)::bigint,
       coalesce((SELECT max(id) FROM inventory_ledger), 0)::bigint
