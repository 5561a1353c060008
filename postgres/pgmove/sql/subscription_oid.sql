-- pg_subscription is shared by the cluster's databases.
SELECT oid FROM pg_subscription
WHERE subname = $1 AND subdbid = (SELECT oid FROM pg_database WHERE datname = current_database())
