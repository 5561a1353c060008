package postgres

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/pgtest"
)

// TestCommitWithSyncRepWarningIsUnknown: a COMMIT that the server answers
// with success plus the warning that its wait for the synchronous standby
// was cancelled (what PostgreSQL does when the client's cancel reaches a
// commit waiting for the standby) is outcome_unknown, not success: the
// commit is local only and may be lost on failover. The warning is raised
// here by hand on a single server; postgres/patroni's
// TestStrictNoStandbyOutcomeUnknown meets the real one. Without
// commitChecked the operation answers success.
func TestCommitWithSyncRepWarningIsUnknown(t *testing.T) {
	db := pgtest.DB(t, 4)
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	f := Follow(cfg)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	f.Attach(pool)
	c, err := New(pool, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	warn := func(tx pgx.Tx, _ int) error {
		_, err := tx.Exec(ctx, `DO $$ BEGIN RAISE WARNING 'canceling wait for synchronous replication due to user request'
			USING DETAIL = 'The transaction has already committed locally, but might not have been replicated to the standby.'; END $$`)
		return err
	}
	err = c.run(ctx, pool, holdfast.RouteReserve, true, true, warn)
	if !errors.Is(err, holdfast.ErrOutcomeUnknown) {
		t.Fatalf("commit answered with the synchronous-replication warning: %v, want ErrOutcomeUnknown", err)
	}
	// The next commit on the same connection, with no warning, succeeds.
	if err := c.run(ctx, pool, holdfast.RouteReserve, true, true, func(tx pgx.Tx, _ int) error { return nil }); err != nil {
		t.Fatalf("a plain commit after it: %v", err)
	}
}
