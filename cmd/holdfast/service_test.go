package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/httpapi"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgcluster"
	"github.com/holdfast/holdfast/postgres/pgshadow"
	"github.com/holdfast/holdfast/postgres/pgstore"
	"github.com/holdfast/holdfast/rediscluster"
	"github.com/holdfast/holdfast/shadow"
)

// privateDB starts a throwaway private cluster, points DATABASE_URL at it
// and returns a pool on it. The test must not be parallel (t.Setenv).
func privateDB(t *testing.T) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	c, err := pgcluster.Start(ctx, pgcluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	t.Setenv("DATABASE_URL", c.URL("postgres"))
	pool, err := pgxpool.New(ctx, c.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// lastLine is the last line of a command's output: where a key is printed.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// TestKeysCreateRotateList: create with a name, scopes and an expiry
// (the key alone on the last line, the record as asked), without --scopes
// every scope, rotate keeps shop, name and scopes and bounds the old key by
// --grace, list prints every column, bad input is a usage error that
// creates nothing.
func TestKeysCreateRotateList(t *testing.T) {
	pool := privateDB(t)
	ctx := context.Background()
	cmd := func(args ...string) string {
		t.Helper()
		code, out, errOut := run(t, args...)
		if code != 0 {
			t.Fatalf("%q: exit %d\n%s%s", args, code, out, errOut)
		}
		return out
	}
	byKey := func(key string) httpapi.APIKey {
		t.Helper()
		keys, err := httpapi.ListKeys(ctx, pgstore.Service(pool), 100)
		if err != nil {
			t.Fatal(err)
		}
		// The newest key whose id the output named.
		for _, k := range keys {
			if strings.Contains(key, fmt.Sprintf("created key %d:", k.ID)) {
				return k
			}
		}
		t.Fatalf("no key record for output %q", key)
		return httpapi.APIKey{}
	}

	before := time.Now()
	out := cmd("keys", "create", "--shop", "5", "--name", "checkout web", "--scopes", "storefront", "--expires-in", "720h")
	key := lastLine(out)
	if !strings.HasPrefix(key, "hf_") || strings.ContainsAny(key, " \t") || len(key) != len("hf_")+43 {
		t.Fatalf("keys create: the last line is not the key alone:\n%s", out)
	}
	rec := byKey(out)
	if rec.ShopID != 5 || rec.Admin || rec.Name != "checkout web" || fmt.Sprint(rec.Scopes) != "[storefront]" || rec.ExpiresAt == nil ||
		rec.ExpiresAt.Before(before.Add(719*time.Hour)) || rec.ExpiresAt.After(time.Now().Add(721*time.Hour)) {
		t.Fatalf("created key record: %+v (expires %v)", rec, rec.ExpiresAt)
	}
	out = cmd("keys", "create", "--shop", "5")
	if rec := byKey(out); fmt.Sprint(rec.Scopes) != "[inventory storefront]" || rec.ExpiresAt != nil || rec.Name != "" {
		t.Fatalf("a key without --scopes: %+v", rec)
	}
	if rec := byKey(cmd("keys", "create", "--shop", "6", "--scopes", "inventory, storefront")); fmt.Sprint(rec.Scopes) != "[inventory storefront]" {
		t.Fatalf("--scopes inventory,storefront: %+v", rec)
	}
	if rec := byKey(cmd("keys", "create", "--admin", "--scopes", "all")); !rec.Admin || len(rec.Scopes) != 2 {
		t.Fatalf("--admin --scopes all: %+v", rec)
	}

	keysBefore, err := httpapi.ListKeys(ctx, pgstore.Service(pool), 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"keys", "create", "--shop", "5", "--scopes", "checkout"}, `unknown scope "checkout"`},
		// An empty list (a script's unset variable) must not mean "every scope".
		{[]string{"keys", "create", "--shop", "5", "--scopes", ""}, "--scopes is empty"},
		{[]string{"keys", "create", "--shop", "5", "--scopes", " , "}, "--scopes is empty"},
		{[]string{"keys", "create", "--shop", "5", "--expires-in", "-1h"}, "--expires-in must be positive"},
		{[]string{"keys", "create", "--shop", "5", "--expires-in", "0s"}, "--expires-in must be positive"},
		{[]string{"keys", "create", "--shop", "5", "--name", strings.Repeat("n", httpapi.KeyNameMaxLen+1)}, "--name has at most"},
		{[]string{"keys", "rotate"}, "needs one key id or key"},
		{[]string{"keys", "rotate", "1", "--grace", "-1s"}, "--grace must not be negative"},
	} {
		code, _, errOut := run(t, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
	if code, _, errOut := run(t, "keys", "rotate", "999999"); code != 1 || !strings.Contains(errOut, "no live key matches") || strings.Contains(errOut, "shows the live keys") {
		t.Errorf("rotate of no key: exit %d %q", code, errOut)
	}
	if keysAfter, _ := httpapi.ListKeys(ctx, pgstore.Service(pool), 100); len(keysAfter) != len(keysBefore) {
		t.Fatalf("refused commands made keys: %d, then %d", len(keysBefore), len(keysAfter))
	}

	// Rotate by the key itself: same shop, name and scopes; the old key
	// expires within the grace.
	out = cmd("keys", "rotate", key, "--grace", "1h")
	newKey := lastLine(out)
	if !strings.HasPrefix(newKey, "hf_") || newKey == key || strings.ContainsAny(newKey, " \t") {
		t.Fatalf("keys rotate: the last line is not a new key alone:\n%s", out)
	}
	nrec := byKey(out)
	if nrec.ShopID != 5 || nrec.Name != "checkout web" || fmt.Sprint(nrec.Scopes) != "[storefront]" {
		t.Fatalf("rotated key: %+v", nrec)
	}
	keys, err := httpapi.ListKeys(ctx, pgstore.Service(pool), 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if k.ID == rec.ID && (k.ExpiresAt == nil || k.ExpiresAt.After(time.Now().Add(time.Hour+time.Minute))) {
			t.Fatalf("the old key after rotate --grace 1h: expires %v", k.ExpiresAt)
		}
	}

	// A revoked key: revoke and rotate say so, with when; an expired one
	// (the rotated key after a grace of 0) says when it expired.
	gone := byKey(cmd("keys", "create", "--shop", "7"))
	cmd("keys", "revoke", fmt.Sprint(gone.ID))
	for _, verb := range []string{"revoke", "rotate"} {
		if code, _, errOut := run(t, "keys", verb, fmt.Sprint(gone.ID)); code != 1 || !strings.Contains(errOut, fmt.Sprintf("key %d is already revoked (at ", gone.ID)) {
			t.Errorf("keys %s of a revoked key: exit %d %q; want 1 and that it is already revoked", verb, code, errOut)
		}
	}
	old := byKey(cmd("keys", "create", "--shop", "7"))
	cmd("keys", "rotate", fmt.Sprint(old.ID), "--grace", "0s")
	if code, _, errOut := run(t, "keys", "rotate", fmt.Sprint(old.ID)); code != 1 || !strings.Contains(errOut, fmt.Sprintf("key %d expired at ", old.ID)) {
		t.Errorf("keys rotate of an expired key: exit %d %q; want 1 and when it expired", code, errOut)
	}

	out = cmd("keys", "list")
	for _, col := range []string{"ID", "SHOP", "shop 5", "shop 6", "NAME", "SCOPES", "CREATED", "EXPIRES", "LAST USED", "REVOKED", "checkout web", "storefront", "inventory,storefront", "admin"} {
		if !strings.Contains(out, col) {
			t.Errorf("keys list lacks %q:\n%s", col, out)
		}
	}
	if strings.Contains(out, key) || strings.Contains(out, newKey) {
		t.Fatal("keys list prints a key")
	}
}

// TestServeFlagErrors: serve's new flags are checked before anything
// starts; the deprecated ones are accepted (and ignored).
func TestServeFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--pprof"}, "--pprof needs --metrics-addr"},
		{[]string{"serve", "--legacy", "http://admin:sekret@example.com"}, "--legacy must be a Redis URL"},
		{[]string{"serve", "--legacy", "redis://127.0.0.1:1/0", "--hold-lifetime-max", "1ms"}, "--hold-lifetime-max must be between"},
		{[]string{"serve", "--log-format", "xml"}, "--log-format must be json or text"},
		// Removed (they were accepted and ignored): now unknown flags.
		{[]string{"serve", "--per-shop-inflight", "3"}, "unknown flag: --per-shop-inflight"},
		{[]string{"serve", "--queue-wait", "1s"}, "unknown flag: --queue-wait"},
	} {
		code, out, errOut := run(t, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", c.args, code, errOut, c.want)
		}
		if strings.Contains(out+errOut, "sekret") {
			t.Errorf("%q: the output carries the URL's password", c.args)
		}
	}
	_, help, _ := run(t, "serve", "--help")
	for _, want := range []string{"connection slots", "--pprof", "--log-errors-only", "--legacy", "HOLDFAST_LEGACY", "--legacy-key-template", "HOLDFAST_HOLD_LIFETIME_MAX"} {
		if !strings.Contains(help, want) {
			t.Errorf("serve --help lacks %q", want)
		}
	}
	if strings.Contains(help, "--queue-wait") || strings.Contains(help, "--per-shop-inflight") {
		t.Error("serve --help lists a removed flag")
	}
}

// freeAddr is a free loopback address.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startServe runs `holdfast serve args...` in-process until the test ends
// and waits until it is ready; it returns the API's base URL.
func startServe(t *testing.T, args ...string) string {
	t.Helper()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var outb, errb bytes.Buffer
	go func() {
		done <- execute(ctx, append([]string{"serve", "--addr", addr, "--log-format", "text"}, args...), &outb, &errb)
	}()
	out, errOut := &outb, &errb
	stopped := false
	t.Cleanup(func() {
		if stopped {
			return
		}
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve %q exited %d\n%s%s", args, code, out, errOut)
		}
	})
	base := "http://" + addr
	deadline := time.Now().Add(2 * time.Minute)
	for {
		res, err := http.Get(base + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return base
			}
		}
		select {
		case code := <-done:
			stopped = true
			cancel()
			t.Fatalf("serve %q exited %d before it was ready\n%s%s", args, code, out, errOut)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve %q was not ready within 2 minutes", args)
		}
	}
}

// call sends a request with a bearer key and returns the status and body.
func call(t *testing.T, method, url, key, body string) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, b
}

// TestServe runs serve in-process on a private cluster. With its default
// flags one shop at 64 concurrent clients gets no 503 (admission is
// work-conserving; the defaults must not undo it), and the shadow routes
// answer 404 shadow_off. With --legacy (a private redis-server) the shadow
// layer answers: a shop enrolled and moved to shadow through the admin
// routes is compared, its metrics are on --metrics-addr beside pprof.
func TestServe(t *testing.T) {
	pool := privateDB(t)
	ctx := context.Background()
	t.Setenv("HOLDFAST_DATA_DIR", t.TempDir()) // never the working directory's

	t.Run("defaults", func(t *testing.T) {
		base := startServe(t)
		shopKey, _, err := httpapi.CreateKey(ctx, pgstore.Service(pool), 1, false)
		if err != nil {
			t.Fatal(err)
		}
		adminKey, _, err := httpapi.CreateKey(ctx, pgstore.Service(pool), 0, true)
		if err != nil {
			t.Fatal(err)
		}
		if code, b := call(t, "GET", base+"/v1/admin/shadow/report", adminKey, ""); code != 404 || !strings.Contains(string(b), `"shadow_off"`) {
			t.Fatalf("shadow report without --legacy: %d %s", code, b)
		}
		if code, b := call(t, "PUT", base+"/v1/shops/1/inventory/1/1", shopKey, `{"available":100000,"reason":"test"}`); code != 200 {
			t.Fatalf("stock: %d %s", code, b)
		}
		const clients, each = 64, 8
		statuses := map[int]int{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		tr := &http.Transport{MaxIdleConnsPerHost: clients}
		defer tr.CloseIdleConnections()
		hc := &http.Client{Transport: tr, Timeout: time.Minute}
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range each {
					body := fmt.Sprintf(`{"checkout_id":%q,"lines":[{"item_id":1,"location_id":1,"quantity":1}]}`, uuid.New())
					req, _ := http.NewRequest("POST", base+"/v1/shops/1/reservations", strings.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Authorization", "Bearer "+shopKey)
					code := 0
					if res, err := hc.Do(req); err == nil {
						_, _ = io.Copy(io.Discard, res.Body)
						res.Body.Close()
						code = res.StatusCode
					}
					mu.Lock()
					statuses[code]++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if statuses[201] != clients*each {
			t.Fatalf("one shop at %d clients, serve's defaults: answers %v; want every one 201 (no 503)", clients, statuses)
		}
		checkInvariant(t, pool)
	})

	t.Run("legacy", func(t *testing.T) {
		redisURL, rsrv, err := rediscluster.URLOrStart(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rsrv != nil {
			defer rsrv.Stop() //nolint:errcheck
		}
		maddr := freeAddr(t)
		t.Setenv("HOLDFAST_LEGACY", redisURL)
		base := startServe(t, "--metrics-addr", maddr, "--pprof", "--log-errors-only", "--max-quantity", "5")
		adminKey, _, err := httpapi.CreateKey(ctx, pgstore.Service(pool), 0, true)
		if err != nil {
			t.Fatal(err)
		}
		shopKey, _, err := httpapi.CreateKey(ctx, pgstore.Service(pool), 17, false)
		if err != nil {
			t.Fatal(err)
		}
		// Enrolled (by the operator's Go API; the CLI does the same).
		admin, err := shadow.New(ctx, pgshadow.NewStore(pool), nil, nil, shadow.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if err := admin.Enroll(ctx, 17); err != nil {
			t.Fatal(err)
		}
		if code, b := call(t, "PUT", base+"/v1/shops/17/inventory/1/1", shopKey, `{"available":50,"reason":"test"}`); code != 200 {
			t.Fatalf("stock: %d %s", code, b)
		}
		if code, b := call(t, "PUT", base+"/v1/admin/shadow/shops/17/mode", shopKey, `{"mode":"shadow"}`); code != 403 {
			t.Fatalf("a shop key changing a mode: %d %s", code, b)
		}
		if code, b := call(t, "PUT", base+"/v1/admin/shadow/shops/17/mode", adminKey, `{"mode":"primary"}`); code != 409 || !strings.Contains(string(b), `"mode_skipped"`) {
			t.Fatalf("legacy to primary: %d %s", code, b)
		}
		if code, b := call(t, "PUT", base+"/v1/admin/shadow/shops/17/mode", adminKey, `{"mode":"shadow","reason":"cli test"}`); code != 200 {
			t.Fatalf("to shadow: %d %s", code, b)
		}
		for range 3 {
			body := fmt.Sprintf(`{"checkout_id":%q,"lines":[{"item_id":1,"location_id":1,"quantity":1}]}`, uuid.New())
			if code, b := call(t, "POST", base+"/v1/shops/17/reservations", shopKey, body); code != 201 {
				t.Fatalf("reserve in shadow: %d %s", code, b)
			}
		}
		// Behind the layer the API still validates by serve's bounds.
		big := fmt.Sprintf(`{"checkout_id":%q,"lines":[{"item_id":1,"location_id":1,"quantity":6}]}`, uuid.New())
		if code, b := call(t, "POST", base+"/v1/shops/17/reservations", shopKey, big); code != 422 || !strings.Contains(string(b), `"lines[0].quantity"`) {
			t.Fatalf("quantity 6 with --max-quantity 5 behind the layer: %d %s", code, b)
		}
		code, b := call(t, "GET", base+"/v1/admin/shadow/report", adminKey, "")
		var rep struct {
			Shops []struct {
				ShopID   int64  `json:"shop_id"`
				Mode     string `json:"mode"`
				Compared int64  `json:"compared"`
				Agreed   int64  `json:"agreed"`
			} `json:"shops"`
		}
		if code != 200 || json.Unmarshal(b, &rep) != nil || len(rep.Shops) != 1 || rep.Shops[0].Mode != "shadow" || rep.Shops[0].Compared < 3 || rep.Shops[0].Agreed != rep.Shops[0].Compared {
			t.Fatalf("report: %d %s", code, b)
		}
		code, b = call(t, "GET", "http://"+maddr+"/metrics", "", "")
		if code != 200 || !strings.Contains(string(b), `holdfast_shadow_mode{mode="shadow",shop="17"} 1`) || !strings.Contains(string(b), "holdfast_shadow_ops_total") {
			t.Fatalf("metrics on --metrics-addr lack the shadow layer's: %d\n%.2000s", code, b)
		}
		if code, _ := call(t, "GET", "http://"+maddr+"/debug/pprof/", "", ""); code != 200 {
			t.Fatalf("--pprof: /debug/pprof/ answered %d", code)
		}
		if code, _ := call(t, "GET", base+"/debug/pprof/", "", ""); code != 404 {
			t.Fatalf("pprof on the API's address: %d", code)
		}
		if code, b := call(t, "POST", base+"/v1/admin/shadow/revert-all", adminKey, ""); code != 200 || !strings.Contains(string(b), "[17]") {
			t.Fatalf("revert-all: %d %s", code, b)
		}
		checkInvariant(t, pool)
	})
}

func checkInvariant(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	hc, err := postgres.New(pool, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := hc.CheckInvariant(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("invariant: %s", rep)
	}
}
