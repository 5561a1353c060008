-- Allocation across locations (issue #16): a shop's default order of
-- locations, which a reservation line with location_id 0 and no candidates
-- is allocated from. locations is a JSON array of at most 16 ids
-- (holdfast.LocationOrderMax, checked by the engine); a shop without a row
-- has no default order.
CREATE TABLE location_orders (
    shop_id    BIGINT      NOT NULL PRIMARY KEY,
    locations  JSON        NOT NULL,
    updated_at DATETIME(6) NOT NULL,
    CONSTRAINT location_orders_shop CHECK (shop_id > 0)
) ENGINE = InnoDB;
