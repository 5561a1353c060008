-- $1 stripes: counter rows 0 … stripes-1, with stock no run exhausts.
INSERT INTO bench_limit_counter (stripe, available)
SELECT s, 1000000000000 FROM generate_series(0, $1::int - 1) s
