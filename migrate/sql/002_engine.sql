-- holdfast schema, version 2: the engine's changes of issue #10.
--
-- Lock order on every path (docs/DESIGN.md): holds (one checkout) ->
-- per-key advisory locks in key order -> allocation buffers
-- (reservation_units, inventory_counters) -> reserved_quantities ->
-- inventory_levels.

-- Checkout ids are scoped per shop: another shop using the same id is a
-- different checkout, never a conflict (and never an oracle across
-- tenants). The hold's key is (shop_id, checkout_id); its lines follow.
ALTER TABLE holds DROP CONSTRAINT holds_pkey;
ALTER TABLE holds ADD PRIMARY KEY (shop_id, checkout_id);

DO $$
DECLARE
    c text;
BEGIN
    SELECT conname INTO STRICT c
    FROM pg_constraint
    WHERE conrelid = 'reserved_quantities'::regclass AND contype = 'u';
    EXECUTE format('ALTER TABLE reserved_quantities DROP CONSTRAINT %I', c);
END $$;
ALTER TABLE reserved_quantities
    ADD CONSTRAINT reserved_quantities_line UNIQUE (shop_id, checkout_id, inventory_item_id, location_id);
