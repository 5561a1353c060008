package mysql_test

import (
	"testing"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/enginetest"
	"github.com/holdfast/holdfast/mysql"
	"github.com/holdfast/holdfast/mysql/mysqltest"
)

// BenchmarkStockSet: a compare-and-set stock set's cost beside a plain
// one, and an import's (enginetest.BenchStockSet).
func BenchmarkStockSet(b *testing.B) {
	db := mysqltest.DB(b, 0)
	c, err := mysql.New(db.DB, holdfast.Config{})
	if err != nil {
		b.Fatal(err)
	}
	enginetest.BenchStockSet(b, c)
}
