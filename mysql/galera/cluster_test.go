package galera_test

import (
	"github.com/holdfast/holdfast/internal/heavy"
	"io"
	"log"
	"os"
	"sync"

	"context"
	mysqldriver "github.com/go-sql-driver/mysql"
	"testing"
	"time"

	"github.com/holdfast/holdfast/mysql/galera"
)

// TestFaultsHeal: each fault moves the writer off the node it hit, the
// other two keep a primary component, and Heal brings the cluster back to
// three Synced nodes with node 1 writable again.
//
// In the full form only (HOLDFAST_FAILOVER_FULL=1): TestFailover and
// TestRunner go through the same faults and heals in the short form.
func TestFaultsHeal(t *testing.T) {
	if !full() {
		t.Skip("HOLDFAST_FAILOVER_FULL=1: TestFailover and TestRunner cover the faults in the short form")
	}
	c := startCluster(t)
	ctx := context.Background()
	for _, k := range c.Kinds() {
		before, err := c.Primary(ctx)
		if err != nil {
			t.Fatal(err)
		}
		at, err := c.Inject(ctx, k)
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		var after string
		for {
			after, err = c.Primary(ctx)
			if err == nil && after != before {
				break
			}
			if time.Since(at) > time.Minute {
				t.Fatalf("%s: no other writable node a minute after the fault: %v", k, err)
			}
		}
		t.Logf("%s: writer %s -> %s after %v", k, before, after, time.Since(at).Round(time.Millisecond))
		if err := c.Heal(ctx); err != nil {
			t.Fatalf("%s: heal: %v", k, err)
		}
		if p, err := c.Primary(ctx); err != nil || p != before {
			t.Fatalf("%s: after heal the writer is %s (%v), want %s", k, p, err, before)
		}
	}
}

var (
	shared     *galera.Cluster
	sharedErr  error
	sharedOnce sync.Once
)

// startCluster is the test binary's cluster, started by the first test
// that needs it (14 s on an idle machine) and stopped by TestMain. Every
// test leaves it whole (Heal).
func startCluster(t *testing.T) *galera.Cluster {
	t.Helper()
	sharedOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), galera.SyncTimeout)
		defer cancel()
		start := time.Now()
		shared, sharedErr = galera.Start(ctx, galera.Options{Log: func(f string, args ...any) { log.Printf(f, args...) }})
		if sharedErr == nil {
			log.Printf("three nodes synced in %v", time.Since(start).Round(time.Millisecond))
		}
	})
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return shared
}

func TestMain(m *testing.M) {
	// The driver logs every connection a fault ends; the tests read the
	// errors themselves.
	_ = mysqldriver.SetLogger(log.New(io.Discard, "", 0))
	// Three servers and their failovers keep every core busy: run alone
	// among the heavy suites, as the Patroni tests do.
	release := heavy.Lock()
	code := m.Run()
	if shared != nil {
		_ = shared.Close(context.Background())
	}
	release()
	os.Exit(code)
}
