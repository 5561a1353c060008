-- An owed line fully converted. ? id, ? units.
DELETE FROM preorder_owed WHERE id = ? AND units <= ?
