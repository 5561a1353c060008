package shadow_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/legacy"
	lredis "github.com/holdfast/holdfast/legacy/redis"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgshadow"
	"github.com/holdfast/holdfast/postgres/pgtest"
	"github.com/holdfast/holdfast/rediscluster"
	"github.com/holdfast/holdfast/shadow"
)

var redisURL string

type shadowStore = legacy.Store

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	u, srv, err := rediscluster.URLOrStart(ctx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "shadow tests:", err)
		os.Exit(1)
	}
	redisURL = u
	if srv != nil {
		// pgtest.Main exits the process; the server's Pdeathsig stops it
		// then, and its directory is a temporary one.
		_ = srv
	}
	pgtest.Main(m)
}

// rig is one test's legacy store, holdfast engine and shadow layer on a
// fresh database and a fresh Redis key prefix.
type rig struct {
	db    *pgtest.Database
	rdb   *goredis.Client
	store *lredis.Store
	hf    *postgres.Client
	sh    *shadow.Engine
	clock *pgtest.Clock
}

const lifetime = time.Hour

func newRig(t *testing.T, wrap func(*lredis.Store) shadowStore) *rig {
	t.Helper()
	return newRigWith(t, nil, wrap)
}

// newRigWith is newRig with the legacy store's config adjusted by conf.
func newRigWith(t *testing.T, conf func(*lredis.Config), wrap func(*lredis.Store) shadowStore) *rig {
	t.Helper()
	ctx := context.Background()
	db := pgtest.DB(t, 40)
	opt, err := goredis.ParseURL(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	opt.PoolSize = 64
	rdb := goredis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	clock := pgtest.NewClock(time.Now())
	lcfg := lredis.Config{
		KeyTemplate: "t:" + uuid.NewString() + ":stock:{shop}:{item}:{location}",
		Prefix:      "t:" + uuid.NewString() + ":",
		Now:         clock.Now,
	}
	if conf != nil {
		conf(&lcfg)
	}
	store, err := lredis.New(rdb, db.Pool, lcfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	hf, err := postgres.New(db.Pool, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var ls shadowStore = store
	if wrap != nil {
		ls = wrap(store)
	}
	sh, err := shadow.New(ctx, pgshadow.NewStore(db.Pool), ls, hf, shadow.Config{HoldLifetimeMax: lifetime, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return &rig{db: db, rdb: rdb, store: store, hf: hf, sh: sh, clock: clock}
}

// toMode walks the shop forward to mode, letting warming pass on the
// injected clock before primary.
func (r *rig) toMode(t *testing.T, shop int64, mode shadow.Mode) {
	t.Helper()
	ctx := context.Background()
	for {
		cur, ok := r.sh.Mode(shop)
		if !ok {
			t.Fatalf("shop %d not enrolled", shop)
		}
		if cur == mode {
			return
		}
		if cur == shadow.ModeShadow {
			r.clock.Advance(lifetime + time.Second)
		}
		if _, err := r.sh.Promote(ctx, shop); err != nil {
			t.Fatalf("promote shop %d from %s: %v", shop, cur, err)
		}
	}
}

func (r *rig) stock(t *testing.T, k holdfast.Key, n int) {
	t.Helper()
	if _, err := r.sh.ChangeStock(context.Background(), holdfast.StockChange{Key: k, Set: &n, Reason: "test stock"}); err != nil {
		t.Fatal(err)
	}
}

func (r *rig) checkInvariant(t *testing.T) {
	t.Helper()
	rep, err := r.hf.CheckInvariant(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("holdfast invariant: %s", rep)
	}
}

func (r *rig) report(t *testing.T, shop int64) shadow.ShopReport {
	t.Helper()
	reps, err := r.sh.Report(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, rep := range reps {
		if rep.ShopID == shop {
			return rep
		}
	}
	t.Fatalf("no report for shop %d", shop)
	return shadow.ShopReport{}
}
