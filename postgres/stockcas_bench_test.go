package postgres_test

import (
	"testing"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/enginetest"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// BenchmarkStockSet: a compare-and-set stock set's cost beside a plain
// one, and an import's (enginetest.BenchStockSet).
func BenchmarkStockSet(b *testing.B) {
	db := pgtest.DB(b, 0)
	c, err := postgres.New(db.Pool, holdfast.Config{})
	if err != nil {
		b.Fatal(err)
	}
	enginetest.BenchStockSet(b, c)
}
