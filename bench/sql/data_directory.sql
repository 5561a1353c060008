-- The server's data directory, where postmaster.pid names its process
-- (readable by superusers and pg_read_all_settings).
SELECT current_setting('data_directory')
