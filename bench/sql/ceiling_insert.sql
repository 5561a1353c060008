-- One row per transaction: what the machine's durable commit costs.
INSERT INTO bench_sink (c) VALUES ($1)
