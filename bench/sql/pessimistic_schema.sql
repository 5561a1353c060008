-- Baseline "pessimistic": the single-row pessimistic pattern on the bench's own
-- tables (never holdfast's). One row per key with stock and reserved_stock,
-- locked with SELECT … FOR UPDATE; every reservation line appends a ledger
-- entry. No CHECK constraint guards reserved_stock <= stock: correctness has
-- to come from the pattern, and the audit proves it.
CREATE TABLE bench_pessimistic_items (
    shop_id           bigint  NOT NULL,
    inventory_item_id bigint  NOT NULL,
    location_id       bigint  NOT NULL,
    stock             integer NOT NULL,
    reserved_stock    integer NOT NULL DEFAULT 0,
    PRIMARY KEY (shop_id, inventory_item_id, location_id)
);
CREATE TABLE bench_pessimistic_ledger (
    id                bigserial   PRIMARY KEY,
    shop_id           bigint      NOT NULL,
    inventory_item_id bigint      NOT NULL,
    location_id       bigint      NOT NULL,
    quantity          integer     NOT NULL,
    type              text        NOT NULL,
    reservation_id    uuid        NOT NULL,
    created_at        timestamptz NOT NULL DEFAULT clock_timestamp()
);
