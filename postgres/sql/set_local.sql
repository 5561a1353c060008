-- Bound a transaction opened in a pipeline: lock waits, statements,
-- idleness, and no JIT. SET LOCAL semantics (is_local = true), so nothing
-- leaks into a pooled server connection behind PgBouncer.
-- $1 lock_timeout, $2 statement_timeout, $3 idle_in_transaction_session_timeout.
SELECT set_config('lock_timeout', $1::text, true),
       set_config('statement_timeout', $2::text, true),
       set_config('idle_in_transaction_session_timeout', $3::text, true),
       set_config('jit', 'off', true)
