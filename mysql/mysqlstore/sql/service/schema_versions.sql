-- The schema versions applied (package mysql/migrations), for readiness.
SELECT version FROM schema_migrations
