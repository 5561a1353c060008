INSERT INTO holdfast_pods (name) SELECT unnest($1::text[]) ON CONFLICT (name) DO NOTHING
