/* app='holdfast',route='bench' */ CREATE TABLE IF NOT EXISTS bench_sink (id BIGINT AUTO_INCREMENT PRIMARY KEY, c BINARY(16) NOT NULL) ENGINE = InnoDB
