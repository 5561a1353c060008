SELECT pg_advisory_unlock(1752139015, hashtext($1::bigint::text))
