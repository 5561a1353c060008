-- galera_status: the wsrep variables and status the doctor's Galera check
-- grades (galera.go). Names are lower-cased; a server without wsrep
-- reports wsrep_on OFF and no wsrep status.
SELECT lower(VARIABLE_NAME), VARIABLE_VALUE FROM information_schema.GLOBAL_VARIABLES
 WHERE VARIABLE_NAME IN ('WSREP_ON', 'WSREP_PROVIDER_OPTIONS', 'INNODB_FLUSH_LOG_AT_TRX_COMMIT', 'BINLOG_FORMAT',
                         'INNODB_AUTOINC_LOCK_MODE', 'WSREP_REJECT_QUERIES', 'WSREP_DESYNC')
UNION ALL
SELECT lower(VARIABLE_NAME), VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS
 WHERE VARIABLE_NAME IN ('WSREP_READY', 'WSREP_CLUSTER_STATUS', 'WSREP_LOCAL_STATE_COMMENT', 'WSREP_CLUSTER_SIZE',
                         'WSREP_LOCAL_CERT_FAILURES', 'WSREP_LOCAL_BF_ABORTS')
