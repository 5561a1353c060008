-- The database's migrations, as one string: the shop tables read from the
-- catalog stay valid while it does not change.
SELECT CONCAT(COUNT(*), ':', COALESCE(MAX(version), 0), ':', COALESCE(MAX(applied_at), '')) FROM schema_migrations
