INSERT INTO holdfast_shadow_stats AS s (shop_id, op, kind, n, legacy_buckets, holdfast_buckets)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (shop_id, op, kind) DO UPDATE SET
    n = s.n + excluded.n,
    legacy_buckets = ARRAY(SELECT a + b FROM unnest(s.legacy_buckets, excluded.legacy_buckets) WITH ORDINALITY AS t(a, b, i) ORDER BY i),
    holdfast_buckets = ARRAY(SELECT a + b FROM unnest(s.holdfast_buckets, excluded.holdfast_buckets) WITH ORDINALITY AS t(a, b, i) ORDER BY i),
    updated_at = clock_timestamp()
