-- The durable limit's counter: one key's count, striped over rows.
CREATE TABLE IF NOT EXISTS bench_limit_counter (stripe INT PRIMARY KEY, available BIGINT NOT NULL, CHECK (available >= 0)) ENGINE = InnoDB
