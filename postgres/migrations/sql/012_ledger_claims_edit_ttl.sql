-- holdfast schema, version 12 (issue #24 item 6): a claim's ledger entry
-- says it is one, and a hold keeps the TTL of the edit that made its
-- revision.
--
-- inventory_ledger.claim marks the entries a claim writes (claim_line.sql):
-- they are hold.claimed events, every other entry is a stock.changed event.
-- The trigger used to tell them apart by reason and reference, so a stock
-- change with reason 'claim' naming a claimed checkout wrote no event.
-- During a rolling upgrade an older binary's claim entries are unmarked and
-- report a stock.changed event too (an extra event, never a missing one).
--
-- holds.edit_ttl is the TTL in microseconds the edit that made the hold's
-- revision carried (0: it kept the expiry); NULL while no edit made it.
-- An edit naming the current revision is a retry only with the same lines
-- and the same TTL.
--
-- Both columns have constant defaults: adding them rewrites nothing.
ALTER TABLE inventory_ledger ADD COLUMN claim boolean NOT NULL DEFAULT false;
ALTER TABLE holds ADD COLUMN edit_ttl bigint CHECK (edit_ttl >= 0);

CREATE OR REPLACE FUNCTION holdfast_stock_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.claim THEN
        RETURN NULL;
    END IF;
    INSERT INTO holdfast_events (shop_id, type, inventory_item_id, location_id, delta, available, reason, reference, created_at)
    VALUES (NEW.shop_id, 'stock.changed', NEW.inventory_item_id, NEW.location_id, NEW.delta,
            NEW.available_after, NEW.reason, NEW.reference, NEW.created_at);
    RETURN NULL;
END $$;
