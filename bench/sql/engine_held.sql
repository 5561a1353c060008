-- Units in active holds (read only: the bench never writes holdfast's tables).
SELECT coalesce(sum(quantity), 0)::bigint FROM reserved_quantities
