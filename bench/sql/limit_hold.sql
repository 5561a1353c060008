-- One durable-limit transaction, one statement: take cardinality($2)
-- units from counter row $1 and insert one row per ID of $2.
WITH c AS (
    UPDATE bench_limit_counter SET available = available - cardinality($2::uuid[])
    WHERE stripe = $1::int
    RETURNING 1
)
INSERT INTO bench_limit_holds (shop_id, id)
SELECT 1, u FROM c, unnest($2::uuid[]) u
