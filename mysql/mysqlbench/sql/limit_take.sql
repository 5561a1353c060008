-- Take ? units from counter row ?.
UPDATE bench_limit_counter SET available = available - ? WHERE stripe = ?
