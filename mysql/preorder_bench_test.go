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

// TestPreorderConvertPass: the maintenance worker's conversion pass
// (enginetest.CheckPreorderConvertPass).
func TestPreorderConvertPass(t *testing.T) {
	t.Parallel()
	db := mysqltest.DB(t, 0)
	c, err := mysql.New(db.DB, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	enginetest.CheckPreorderConvertPass(t, c, c.ConvertPreordersOnce)
}
