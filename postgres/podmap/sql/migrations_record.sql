INSERT INTO holdfast_podmap_migrations (version) VALUES ($1)
