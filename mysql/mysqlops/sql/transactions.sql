SELECT t.trx_mysql_thread_id, t.trx_state,
       TIMESTAMPDIFF(MICROSECOND, t.trx_started, NOW(6)) / 1e6,
       coalesce(TIMESTAMPDIFF(MICROSECOND, t.trx_wait_started, NOW(6)) / 1e6, 0),
       coalesce(p.COMMAND, ''), coalesce(p.USER, ''), coalesce(p.HOST, ''),
       coalesce(p.INFO, t.trx_query, ''), t.trx_rows_locked, t.trx_rows_modified
  FROM information_schema.INNODB_TRX t
  LEFT JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id
 WHERE t.trx_mysql_thread_id <> CONNECTION_ID()
 ORDER BY t.trx_started
 LIMIT ?
