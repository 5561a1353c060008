SELECT p.name, p.accepts_new,
       (SELECT count(*) FROM holdfast_shop_pods s WHERE s.pod = p.name)::int AS shops
FROM holdfast_pods p ORDER BY p.name
