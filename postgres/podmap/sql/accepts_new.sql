UPDATE holdfast_pods SET accepts_new = $2 WHERE name = $1 RETURNING name
