package mysqlops_test

import (
	"testing"

	"github.com/holdfast/holdfast/mysqltest"
)

func TestMain(m *testing.M) { mysqltest.Main(m) }
