-- Baseline "optimistic": a version column read without locks, then a
-- conditional UPDATE … WHERE version = $v; a lost race rolls back and
-- retries. The bench's own tables, never holdfast's. No CHECK constraint
-- guards reserved <= stock: the pattern has to, and the audit proves it.
CREATE TABLE bench_opt_items (
    shop_id           bigint  NOT NULL,
    inventory_item_id bigint  NOT NULL,
    location_id       bigint  NOT NULL,
    stock             integer NOT NULL,
    reserved          integer NOT NULL DEFAULT 0,
    version           bigint  NOT NULL DEFAULT 0,
    PRIMARY KEY (shop_id, inventory_item_id, location_id)
) WITH (fillfactor = 50);
CREATE TABLE bench_opt_holds (
    checkout_id       uuid    NOT NULL,
    shop_id           bigint  NOT NULL,
    inventory_item_id bigint  NOT NULL,
    location_id       bigint  NOT NULL,
    quantity          integer NOT NULL,
    PRIMARY KEY (checkout_id, inventory_item_id, location_id)
);
