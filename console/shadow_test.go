package console_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/httpapi"
	lredis "github.com/holdfast/holdfast/legacy/redis"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgshadow"
	"github.com/holdfast/holdfast/postgres/pgstore"
	"github.com/holdfast/holdfast/postgres/pgtest"
	"github.com/holdfast/holdfast/rediscluster"
	"github.com/holdfast/holdfast/shadow"
)

// newShadowServer is a holdfast API server with the shadow layer in
// front (a private Redis as the legacy store): the layer, the server's
// address and an admin key.
func newShadowServer(t *testing.T) (*shadow.Engine, string, string) {
	t.Helper()
	ctx := context.Background()
	u, rsrv, err := rediscluster.URLOrStart(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rsrv != nil {
		t.Cleanup(func() { _ = rsrv.Stop() })
	}
	opt, err := goredis.ParseURL(u)
	if err != nil {
		t.Fatal(err)
	}
	rdb := goredis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	db := pgtest.DB(t, 20)
	hc, err := postgres.New(db.Pool, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	p := "t:" + uuid.NewString() + ":"
	store, err := lredis.New(rdb, db.Pool, lredis.Config{Prefix: p, KeyTemplate: p + "stock:{shop}:{item}:{location}"})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	sh, err := shadow.New(ctx, pgshadow.NewStore(db.Pool), store, hc, shadow.Config{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := httpapi.New(httpapi.Config{Engine: sh, Store: pgstore.Service(db.Pool), Logger: log, KeyCacheTTL: -1, Workers: []httpapi.Worker{sh}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	base := "http://" + ln.Addr().String()
	admin, _, err := httpapi.CreateKey(ctx, pgstore.Service(db.Pool), 0, true)
	if err != nil {
		t.Fatal(err)
	}
	return sh, base, admin
}

// TestConsoleShadow: with the shadow layer in front, the shop page shows
// the shop's mode and its agreement, and the overview lists the modes.
func TestConsoleShadow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sh, base, admin := newShadowServer(t)
	if err := sh.Enroll(ctx, 1); err != nil {
		t.Fatal(err)
	}
	n := 50
	if _, err := sh.ChangeStock(ctx, holdfast.StockChange{Key: holdfast.Key{ShopID: 1, ItemID: 7, LocationID: 1}, Set: &n, Reason: "stocktake"}); err != nil {
		t.Fatal(err)
	}
	if err := sh.SetMode(ctx, 1, shadow.ModeShadow, "ramp"); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if _, err := sh.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 7, LocationID: 1, Quantity: 1}}}); err != nil {
			t.Fatal(err)
		}
	}
	c := client(t)
	res, body := get(t, c, base+"/console/shops/1", "Authorization", "Bearer "+admin)
	if res.StatusCode != http.StatusOK || !strings.Contains(body, "Mode: <strong>shadow</strong>") {
		t.Fatalf("shop page: %d, no shadow mode in\n%s", res.StatusCode, body)
	}
	m := regexp.MustCompile(`compared (\d+), agreed (\d+) \(([0-9.]+%)\)`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("shop page shows no agreement:\n%s", body)
	}
	compared, _ := strconv.Atoi(m[1])
	if compared < 4 || m[1] != m[2] || m[3] != "100.00%" {
		t.Errorf("agreement %q, want at least 4 compared, all agreed", m[0])
	}
	res, body = get(t, c, base+"/console/", "Authorization", "Bearer "+admin)
	if res.StatusCode != http.StatusOK || !regexp.MustCompile(`<td><a href="/console/shops/1">1</a></td><td>shadow</td>`).MatchString(body) {
		t.Errorf("overview: %d, no shadow mode row for shop 1 in\n%s", res.StatusCode, body)
	}
	// A shop that is not enrolled says so.
	if _, body := get(t, c, base+"/console/shops/2", "Authorization", "Bearer "+admin); !strings.Contains(body, "not enrolled") {
		t.Errorf("shop 2's page does not say it is not enrolled:\n%s", body)
	}
}

// TestConsoleShadowNothingCompared: a shop enrolled with nothing compared
// yet shows its agreement as "-", as holdfast shadow report does, not as
// 0.00%.
func TestConsoleShadowNothingCompared(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sh, base, admin := newShadowServer(t)
	if err := sh.Enroll(ctx, 3); err != nil {
		t.Fatal(err)
	}
	res, body := get(t, client(t), base+"/console/shops/3", "Authorization", "Bearer "+admin)
	m := regexp.MustCompile(`compared (\d+), agreed (\d+) \(([^)]*)\)`).FindStringSubmatch(body)
	if res.StatusCode != http.StatusOK || m == nil {
		t.Fatalf("shop 3's page: %d, no agreement in\n%s", res.StatusCode, body)
	}
	if m[1] != "0" || m[3] != "-" {
		t.Errorf("agreement %q, want compared 0 and the rate as -", m[0])
	}
}
