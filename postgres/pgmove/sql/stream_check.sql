-- Whether this pod can be a streamed move's source or target: the
-- server's wal_level (a source needs logical) and migration 20's marks.
SELECT current_setting('wal_level'), to_regclass('holdfast_move_marks') IS NOT NULL
