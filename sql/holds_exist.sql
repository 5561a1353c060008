-- Which of these checkouts already have a hold or an outcome. $1 checkouts.
SELECT checkout_id FROM holds WHERE checkout_id = ANY($1::uuid[])
