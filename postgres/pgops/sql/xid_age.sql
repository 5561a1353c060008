-- Transaction ID age of this database (how far anti-wraparound vacuum is
-- behind), the server's freeze threshold, and the age of the oldest xmin
-- holding back vacuum here: sessions of this database, replication slots and
-- prepared transactions.
SELECT age(d.datfrozenxid)::bigint,
       current_setting('autovacuum_freeze_max_age')::bigint,
       greatest(
         (SELECT max(age(a.backend_xmin)) FROM pg_stat_activity a
           WHERE a.datname = current_database() AND a.pid <> pg_backend_pid()),
         (SELECT max(greatest(age(s.xmin), age(s.catalog_xmin))) FROM pg_replication_slots s),
         (SELECT max(age(p.transaction)) FROM pg_prepared_xacts p WHERE p.database = current_database()),
         0)::bigint
FROM pg_database d
WHERE d.datname = current_database()
