package mysql

import (
	"fmt"
	"testing"

	mysqldriver "github.com/go-sql-driver/mysql"
)

// TestCommitFailureOnGaleraIsUnknown: a COMMIT a Galera node answers with
// 1180 after it lost the primary component (TestFailover's kill round) is a
// lost connection — its outcome unknown, the connection not reused — not an
// untyped error passed to the caller.
func TestCommitFailureOnGaleraIsUnknown(t *testing.T) {
	err := fmt.Errorf("commit: %w", &mysqldriver.MySQLError{Number: 1180, Message: "Error while appending streaming replication fragment(provider status: Not connected to Primary Component)"})
	if !connectionLost(err) {
		t.Fatalf("connectionLost(%v) = false, want true", err)
	}
	if connectionLost(fmt.Errorf("x: %w", &mysqldriver.MySQLError{Number: erDupEntry})) {
		t.Fatal("a duplicate key is not a lost connection")
	}
}
