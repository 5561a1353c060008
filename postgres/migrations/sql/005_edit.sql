-- holdfast schema, version 5: editing a held checkout and partial claims
-- (issue #16).
--
-- revision counts a hold's versions: 1 at Reserve, +1 per Edit. An edit
-- names the revision it makes (current + 1): a retry of the same edit finds
-- it in place and answers the same, an out-of-date one is a conflict.
-- released is what a partial claim (ClaimLines) gave back, kept with the
-- outcome so a retry answers the same; NULL for every other hold.
--
-- Both columns have constant defaults: adding them rewrites nothing.
ALTER TABLE holds
    ADD COLUMN revision bigint NOT NULL DEFAULT 1 CHECK (revision >= 1),
    ADD COLUMN released jsonb;
