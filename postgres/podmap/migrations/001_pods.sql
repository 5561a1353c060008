-- The shard map: which pod each shop lives on (package pods). It lives in a
-- small control database of its own, read by every router through a cache.
CREATE TABLE holdfast_pods (
    name        text PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9_.-]{1,63}$'),
    -- false: the assignment policy places no new shop here (its shops stay)
    accepts_new boolean NOT NULL DEFAULT true,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE holdfast_shop_pods (
    shop_id     bigint PRIMARY KEY CHECK (shop_id > 0),
    pod         text NOT NULL REFERENCES holdfast_pods (name),
    -- grows by one at every switch (a move), so a placement read before a
    -- move is told apart from one read after it
    epoch       bigint NOT NULL DEFAULT 1 CHECK (epoch > 0),
    assigned_at timestamptz NOT NULL DEFAULT now()
);

-- shop counts per pod (the least-loaded policy, `holdfast pods list`)
CREATE INDEX holdfast_shop_pods_pod ON holdfast_shop_pods (pod);
