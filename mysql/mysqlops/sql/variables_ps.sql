SELECT lower(VARIABLE_NAME), VARIABLE_VALUE FROM performance_schema.global_variables
 WHERE lower(VARIABLE_NAME) IN ('tx_isolation', 'transaction_isolation', 'innodb_lock_wait_timeout', 'innodb_thread_concurrency')
