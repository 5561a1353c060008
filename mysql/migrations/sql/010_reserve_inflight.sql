-- A checkout's in-flight mark (issue #10 item 4, docs/FAULTS.md finding 7).
-- Every reservation attempt writes its checkout's row here first and
-- deletes it in the same transaction: no row is left, but InnoDB keeps the
-- deleted record and its exclusive lock to COMMIT or ROLLBACK. A retry of
-- the same checkout waits on it (its own insert) or learns of it without
-- waiting (the sold-out hint's NOWAIT read), as PostgreSQL's in-flight
-- advisory lock does. The rows are never seen committed.
CREATE TABLE reserve_inflight (
    shop_id     BIGINT     NOT NULL,
    checkout_id BINARY(16) NOT NULL,
    PRIMARY KEY (shop_id, checkout_id)
) ENGINE = InnoDB;
