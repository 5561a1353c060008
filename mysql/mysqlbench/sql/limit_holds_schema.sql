-- The durable limit's holds: one narrow row per hold, one index entry.
CREATE TABLE IF NOT EXISTS bench_limit_holds (shop_id BIGINT NOT NULL, id BINARY(16) NOT NULL, PRIMARY KEY (shop_id, id)) ENGINE = InnoDB
