-- Lock a shop's registrations (a named lock of the session, per database
-- and shop, at most ? seconds' wait: 1 when taken) before counting them
-- against the per-shop bound: under READ COMMITTED a locking count takes
-- no gap lock, so two registrations for a shop with no endpoint yet
-- could both count short. ? shop, ? wait seconds.
SELECT GET_LOCK(CONCAT('holdfast-wh-', MD5(CONCAT(DATABASE(), '/', ?))), ?)
