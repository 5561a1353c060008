package mysql_test

import (
	"testing"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/enginetest"
	"github.com/holdfast/holdfast/mysql"
	"github.com/holdfast/holdfast/mysql/mysqltest"
)

// BenchmarkReservePreorder: a pre-ordered reservation's cost beside a
// plain one (enginetest.BenchReservePreorder).
func BenchmarkReservePreorder(b *testing.B) {
	db := mysqltest.DB(b, 8)
	c, err := mysql.New(db.DB, holdfast.Config{Strategy: holdfast.StrategyCounter})
	if err != nil {
		b.Fatal(err)
	}
	enginetest.BenchReservePreorder(b, c)
}
