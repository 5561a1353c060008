-- holdfast schema, version 7: per-buyer limits and safety stock (issue #16
-- items 3 and 4).
--
-- Lock order (docs/DESIGN.md): holds (one checkout) -> per-(shop, item,
-- buyer) advisory locks in item order (reservations with a buyer id on a
-- limited item only) -> per-key advisory locks in key order -> buffers ->
-- reserved_quantities -> inventory_levels.

-- Safety stock: units of a key withheld from sale. Sellable is
-- available - safety - held; buffers never hold units that would eat into
-- it. Claims and stock changes are unchanged.
ALTER TABLE inventory_levels
    ADD COLUMN safety integer NOT NULL DEFAULT 0 CHECK (safety >= 0);
-- The doctor lists the keys with a safety stock without a full scan.
CREATE INDEX inventory_levels_safety ON inventory_levels (shop_id, inventory_item_id, location_id) WHERE safety > 0;

-- The buyer a hold was made for: HMAC-SHA256 of the shop's opaque buyer id
-- under the deployment's secret (holdfast_secrets), never the raw id. NULL:
-- no buyer given.
ALTER TABLE holds ADD COLUMN buyer_hash bytea CHECK (octet_length(buyer_hash) = 32);
CREATE INDEX holds_buyer ON holds (shop_id, buyer_hash) WHERE buyer_hash IS NOT NULL;

-- Per-(shop, item) limit on the units one buyer may have in active holds
-- plus claims that ended within window_us (0: every claim still on record,
-- i.e. within the outcome retention).
CREATE TABLE buyer_limits (
    shop_id           bigint      NOT NULL CHECK (shop_id > 0),
    inventory_item_id bigint      NOT NULL CHECK (inventory_item_id > 0),
    buyer_limit       integer     NOT NULL CHECK (buyer_limit >= 0),
    window_us         bigint      NOT NULL CHECK (window_us >= 0),
    updated_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (shop_id, inventory_item_id)
);

-- Per-deployment secrets. 'buyer' keys the buyer-id HMAC when the
-- engine's Config.BuyerSecret is empty: generated once by the first engine
-- that needs it (INSERT … ON CONFLICT DO NOTHING), then shared by every
-- replica. Losing it makes existing holds' buyers unrecognisable (limits
-- then count only holds made after).
CREATE TABLE holdfast_secrets (
    name       text        PRIMARY KEY,
    secret     bytea       NOT NULL CHECK (octet_length(secret) >= 32),
    created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
