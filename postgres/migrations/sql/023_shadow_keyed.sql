-- holdfast schema, version 23: the shadow layer's per-shop history keyed
-- by (shop_id, id), as migration 15 keyed the events and the ledger and
-- migration 21 the webhook tables. A shop migrated from the legacy store
-- keeps its mode changes and disagreement samples; keyed by id alone they
-- made every such shop unmovable between pods (a move refused it). Now a
-- move (pods, postgres/pgmove) carries them like any shop table, and the
-- target's sequences are advanced past the copied ids.
ALTER TABLE holdfast_shadow_mode_changes
    DROP CONSTRAINT holdfast_shadow_mode_changes_pkey,
    ADD PRIMARY KEY (shop_id, id);
ALTER TABLE holdfast_shadow_samples
    DROP CONSTRAINT holdfast_shadow_samples_pkey,
    ADD PRIMARY KEY (shop_id, id);
-- The primary key now serves what this index did.
DROP INDEX holdfast_shadow_samples_shop;
