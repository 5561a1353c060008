CREATE TABLE IF NOT EXISTS holdfast_podmap_migrations (
    version    int PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
)
