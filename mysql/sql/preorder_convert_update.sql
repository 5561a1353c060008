-- An owed line partly converted. ? units, ? id, ? units.
UPDATE preorder_owed SET units = units - ? WHERE id = ? AND units > ?
