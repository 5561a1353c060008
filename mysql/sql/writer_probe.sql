-- writer_probe: may holdfast write to this node? (multihost.go) Not
-- read-only and, on a Galera node, ready, Synced, in the primary component
-- and accepting queries. A node that is not ready answers 1047 instead.
SELECT @@global.read_only,
       @@global.wsrep_on,
       @@global.wsrep_reject_queries,
       COALESCE((SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'WSREP_READY'), ''),
       COALESCE((SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'WSREP_LOCAL_STATE_COMMENT'), ''),
       COALESCE((SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'WSREP_CLUSTER_STATUS'), '')
