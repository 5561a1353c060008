SELECT ID, coalesce(USER, ''), coalesce(COMMAND, ''), coalesce(INFO, '')
  FROM information_schema.PROCESSLIST
 WHERE ID <> CONNECTION_ID() AND COMMAND NOT IN ('Daemon', 'Binlog Dump')
   AND coalesce(USER, '') NOT IN ('system user', 'event_scheduler')
 LIMIT ?
