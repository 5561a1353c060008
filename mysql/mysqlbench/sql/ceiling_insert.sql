INSERT INTO bench_sink (c) VALUES (?)
