-- The durable limit's tables: one key's count striped over rows, and one
-- narrow row per hold with one index entry.
DROP TABLE IF EXISTS bench_limit_counter, bench_limit_holds;
CREATE TABLE bench_limit_counter (stripe int PRIMARY KEY, available bigint NOT NULL CHECK (available >= 0));
CREATE TABLE bench_limit_holds (shop_id bigint NOT NULL, id uuid NOT NULL, PRIMARY KEY (shop_id, id));
