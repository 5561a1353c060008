/* app='holdfast',route='bench' */ INSERT INTO bench_sink (c) VALUES (?)
