-- Every change of a shop's placement (a switch, a removal), so routers can
-- follow the map (one small read a second) instead of waiting out their
-- cache's TTL. Kept an hour: a router that missed more re-reads every
-- placement.
CREATE TABLE holdfast_shop_pod_changes (
    revision   bigserial PRIMARY KEY,
    shop_id    bigint NOT NULL,
    changed_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX holdfast_shop_pod_changes_at ON holdfast_shop_pod_changes (changed_at);

CREATE FUNCTION holdfast_shop_pods_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO holdfast_shop_pod_changes (shop_id) VALUES (OLD.shop_id);
    DELETE FROM holdfast_shop_pod_changes WHERE changed_at < now() - interval '1 hour';
    RETURN NULL;
END $$;

CREATE TRIGGER holdfast_shop_pods_changed AFTER UPDATE OR DELETE ON holdfast_shop_pods
    FOR EACH ROW EXECUTE FUNCTION holdfast_shop_pods_changed();
