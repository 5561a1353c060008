-- The move's fence: the shop's move lock on this database (migration 15's
-- guard refuses the shop's writes while any session holds it). Lock names
-- are server-wide, hence the database's CRC32 in it. ? shop, ? wait in
-- seconds. 1: held; 0: another session (a move) holds it.
SELECT GET_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', ?), ?)
