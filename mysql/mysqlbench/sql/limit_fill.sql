-- ? stripes: counter rows 0 … stripes-1, with stock no run exhausts.
INSERT INTO bench_limit_counter (stripe, available)
SELECT s.n - 1, 1000000000000 FROM JSON_TABLE(CONCAT('[', REPEAT('0,', ? - 1), '0]'), '$[*]' COLUMNS (n FOR ORDINALITY)) s
