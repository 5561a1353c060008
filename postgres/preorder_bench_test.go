package postgres_test

import (
	"testing"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/enginetest"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// BenchmarkReservePreorder: a pre-ordered reservation's cost beside a
// plain one (enginetest.BenchReservePreorder).
func BenchmarkReservePreorder(b *testing.B) {
	db := pgtest.DB(b, 8)
	c, err := postgres.New(db.Pool, holdfast.Config{Strategy: holdfast.StrategyCounter})
	if err != nil {
		b.Fatal(err)
	}
	enginetest.BenchReservePreorder(b, c)
}

// TestPreorderConvertPass: the maintenance worker's conversion pass
// (enginetest.CheckPreorderConvertPass).
func TestPreorderConvertPass(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t, 0)
	c, err := postgres.New(db.Pool, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	enginetest.CheckPreorderConvertPass(t, c, c.ConvertPreordersOnce)
}
