package postgres_test

import (
	"testing"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/enginetest"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// BenchmarkMerge: a merge's cost beside a plain reservation's
// (enginetest.BenchMerge).
func BenchmarkMerge(b *testing.B) {
	db := pgtest.DB(b, 0)
	c, err := postgres.New(db.Pool, holdfast.Config{})
	if err != nil {
		b.Fatal(err)
	}
	enginetest.BenchMerge(b, c)
}
