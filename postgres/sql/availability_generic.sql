-- Plans availability.sql, in the same implicit transaction (one pipeline,
-- one Sync), with its generic plan: planned per call (a custom plan for
-- each array), it cost two to three times its execution. is_local: the
-- setting ends with that transaction, never reaching the connection's
-- next statement.
SELECT set_config('plan_cache_mode', 'force_generic_plan', true)
