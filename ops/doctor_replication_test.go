package ops_test

import (
	"strings"
	"testing"

	"github.com/holdfast/holdfast/ops"
	"github.com/holdfast/holdfast/pgtest"
)

// TestDoctorReplicationSingleServer: a server with no standby is reported
// as one, not as a failure. (A Patroni cluster with and without its
// synchronous standby: postgres/patroni's TestDoctorReplication.)
func TestDoctorReplicationSingleServer(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t, 4)
	f := one(t, doctor(t, db.Pool, ops.DoctorConfig{}), "replication.synchronous")
	if f.Severity != ops.SeverityOK || !strings.Contains(f.Message, "a single server, no standby") || !strings.Contains(f.Message, "timeline") {
		t.Fatalf("%+v, want ok: a single server with its timeline", f)
	}
}
