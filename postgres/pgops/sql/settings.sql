-- Server settings the doctor checks, as this session sees them (server,
-- database and role defaults applied): raw value, unit, SHOW form, source.
SELECT name, setting, coalesce(unit, ''), current_setting(name), source
FROM pg_settings
WHERE name = ANY ($1::text[])
