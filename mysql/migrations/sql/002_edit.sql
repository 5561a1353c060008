-- holdfast MySQL/MariaDB schema, version 2: editing a held checkout and
-- partial claims (issue #16).
--
-- revision counts a hold's versions: 1 at Reserve, +1 per Edit; an edit
-- names the revision it makes, so a retry answers the same and an
-- out-of-date one is a conflict. released is what a partial claim
-- (ClaimLines) gave back, kept with the outcome so a retry answers the
-- same; NULL for every other hold. Both are instant column additions on
-- MySQL 8 and MariaDB 10.3+ (constant default, appended at the end).
ALTER TABLE holds
    ADD COLUMN revision BIGINT NOT NULL DEFAULT 1,
    ADD COLUMN released JSON NULL;
ALTER TABLE holds
    ADD CONSTRAINT holds_revision CHECK (revision >= 1);
