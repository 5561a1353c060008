package pgshadow_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/holdfast/holdfast/postgres/pgshadow"
	"github.com/holdfast/holdfast/postgres/pgtest"
	"github.com/holdfast/holdfast/rediscluster"
)

var redisURL string

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	u, _, err := rediscluster.URLOrStart(ctx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgshadow tests:", err)
		os.Exit(1)
	}
	// pgtest.Main exits the process; the Redis server's Pdeathsig stops
	// it then, and its directory is a temporary one.
	redisURL = u
	pgtest.Main(m)
}

// TestDemoCrashInjection runs the migration demo: the crashes injected
// between the legacy's ledger write and its Redis cleanup cause real
// anomalies (measured), the same crash schedule through holdfast causes
// none, and the ramp ends with every shop answered by its truth.
func TestDemoCrashInjection(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t, 40)
	opt, err := goredis.ParseURL(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	rdb := goredis.NewClient(opt)
	defer rdb.Close()
	var out bytes.Buffer
	sum, err := pgshadow.Demo(context.Background(), &out, db.Pool, rdb, pgshadow.DemoOptions{Seed: 7})
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	ledgerFirst, redisFirst, hf := sum.Sales[0], sum.Sales[1], sum.Sales[2]
	if ledgerFirst.Crashed == 0 || redisFirst.Crashed == 0 || hf.Crashed == 0 {
		t.Fatalf("crash schedule hit no claim: %+v", sum.Sales)
	}
	// Ledger first: the crashed holds stay reserved after the deduction, and
	// once expired their units sell again.
	if ledgerFirst.Oversold+ledgerFirst.Undersold == 0 || ledgerFirst.LedgerLeft != ledgerFirst.Units-ledgerFirst.Sold {
		t.Fatalf("ledger-first legacy with %d crashed claims: %+v", ledgerFirst.Crashed, ledgerFirst)
	}
	// Redis first: every crashed claim is a unit sold and never deducted.
	if redisFirst.NeverDeducted != redisFirst.Crashed || redisFirst.Oversold != 0 {
		t.Fatalf("redis-first legacy: %+v, want never deducted = crashed claims", redisFirst)
	}
	if hf.Oversold != 0 || hf.Undersold != 0 || hf.NeverDeducted != 0 || hf.Sold > hf.Units || hf.LedgerLeft != hf.Units-hf.Sold {
		t.Fatalf("holdfast anomalies: %+v", hf)
	}
	last := sum.Ramp[len(sum.Ramp)-1]
	for _, r := range last.Shops {
		if len(r.Disagreements) != 0 {
			t.Fatalf("ramp shop %d disagreements %v", r.ShopID, r.Disagreements)
		}
	}
}
