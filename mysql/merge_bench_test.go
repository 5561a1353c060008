package mysql_test

import (
	"testing"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/enginetest"
	"github.com/holdfast/holdfast/mysql"
	"github.com/holdfast/holdfast/mysql/mysqltest"
)

// BenchmarkMerge: a merge's cost beside a plain reservation's
// (enginetest.BenchMerge).
func BenchmarkMerge(b *testing.B) {
	db := mysqltest.DB(b, 0)
	c, err := mysql.New(db.DB, holdfast.Config{})
	if err != nil {
		b.Fatal(err)
	}
	enginetest.BenchMerge(b, c)
}
