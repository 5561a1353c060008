SELECT RELEASE_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', ?))
