-- The durable-commit ceiling's scratch table.
DROP TABLE IF EXISTS bench_sink;
CREATE TABLE bench_sink (id bigserial PRIMARY KEY, c uuid NOT NULL);
