-- Bound the transaction: lock waits, statements and idleness. SET LOCAL
-- semantics, so nothing leaks into a pooled (PgBouncer) server connection.
-- $1 lock_timeout, $2 statement_timeout, $3 idle_in_transaction_session_timeout.
SELECT set_config('lock_timeout', $1::text, true),
       set_config('statement_timeout', $2::text, true),
       set_config('idle_in_transaction_session_timeout', $3::text, true)
