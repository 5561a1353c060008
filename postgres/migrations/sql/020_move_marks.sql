-- holdfast schema, version 20: the barrier of a streamed shop move
-- (issue #28; postgres/pgmove). A streamed move copies a shop's rows to
-- the target pod and streams its changes by logical replication while the
-- shop trades; under the fence the mover writes a mark of the shop here on
-- the source, in the move's publication, and waits for it on the target:
-- the subscription applies in commit order, so every change of the shop
-- the source committed is there. Not a shop's data: a move does not copy,
-- digest, guard or purge it (the mover deletes its marks).
CREATE TABLE holdfast_move_marks (
    shop_id bigint      NOT NULL,
    mark    bigint      NOT NULL,
    at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (shop_id, mark)
);
