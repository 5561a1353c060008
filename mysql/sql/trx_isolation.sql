-- The isolation level of the current transaction (InnoDB's own view: it
-- sees SET TRANSACTION, which @@tx_isolation does not).
SELECT trx_isolation_level FROM information_schema.INNODB_TRX
WHERE trx_mysql_thread_id = CONNECTION_ID()
