-- Allocation across locations (issue #16): a shop's default order of
-- locations, which a reservation line with location_id 0 and no candidates
-- is allocated from (first location that can supply it, or split across
-- them in this order when the line allows it). At most 16 locations
-- (holdfast.LocationOrderMax, checked by the engine); a shop without a row
-- has no default order.
CREATE TABLE location_orders (
    shop_id    bigint      PRIMARY KEY CHECK (shop_id > 0),
    locations  bigint[]    NOT NULL CHECK (cardinality(locations) BETWEEN 1 AND 16),
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
