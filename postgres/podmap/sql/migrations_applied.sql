SELECT coalesce(max(version), 0) FROM holdfast_podmap_migrations
