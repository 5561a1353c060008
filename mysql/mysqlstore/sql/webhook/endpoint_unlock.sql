-- Release endpoint_lock.sql's lock, after the registration committed.
-- ? shop.
SELECT RELEASE_LOCK(CONCAT('holdfast-wh-', MD5(CONCAT(DATABASE(), '/', ?))))
