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
