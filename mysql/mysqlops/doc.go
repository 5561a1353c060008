// Package mysqlops checks the health of holdfast on MySQL and MariaDB: the
// doctor behind `holdfast doctor` when the database is mysql:// (or
// --engine mysql), in the report shape of package health.
//
// Its checks are the MySQL forms of the PostgreSQL doctor's: InnoDB's
// history list length (purge lag, MySQL's dead tuples) as an SLI with a
// threshold; long-running and idle transactions (information_schema.INNODB_TRX
// joined to the process list) and lock waits, each named by the caller in
// the comment tag of the statement running (/* app='holdfast',route='…' */,
// which every statement of the mysql engine carries); the isolation level,
// innodb_lock_wait_timeout and innodb_thread_concurrency against holdfast's
// recommendations; connection-seconds by caller sampled from the process
// list; and the engine's invariant check.
//
// An idle connection runs no statement, so the process list cannot name
// the caller of an idle transaction (performance_schema, off by default on
// MariaDB, could): such transactions are reported by thread, user and host.
package mysqlops
