package httpapi_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/http"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast/httpapi"
)

// TestKeyScopes: a storefront key reserves and reads but gets 403 on stock
// changes; an inventory key changes stock but cannot reserve; a key made
// without scopes can do both; names and scopes show in ListKeys.
func TestKeyScopes(t *testing.T) { t.Parallel(); engines(t, testKeyScopes) }

func testKeyScopes(t *testing.T, engine string) {
	e := newEnvOn(t, engine, envOpts{})
	ctx := context.Background()
	mk := func(name string, scopes ...httpapi.Scope) string {
		key, rec, err := httpapi.CreateKeyWith(ctx, e.store, httpapi.KeySpec{ShopID: 1, Name: name, Scopes: scopes})
		if err != nil {
			t.Fatal(err)
		}
		if rec.Name != name {
			t.Fatalf("record %+v", rec)
		}
		e.keys[name] = key
		return key
	}
	mk("web", httpapi.ScopeStorefront)
	mk("wms", httpapi.ScopeInventory)
	inv := "/v1/shops/1/inventory/7/1"
	set := req{method: "PUT", path: inv, body: `{"available":5,"reason":"count"}`}
	adjust := req{method: "POST", path: inv + "/adjust", body: `{"delta":1,"reason":"restock"}`}
	reserve := func() req {
		return req{method: "POST", path: res1, body: reserveBody(uuid.New(), line(7, 1), "")}
	}

	set.key, adjust.key = "wms", "wms"
	e.expect(set, 200, "")
	e.expect(adjust, 200, "")
	r := reserve()
	r.key = "wms"
	e.expect(r, 403, "forbidden")

	set.key, adjust.key = "web", "web"
	if r := e.expect(set, 403, "forbidden"); r.errMember("message") == "" {
		t.Fatal("403 without a message")
	}
	e.expect(adjust, 403, "forbidden")
	r = reserve()
	r.key = "web"
	e.expect(r, 201, "")
	for _, k := range []string{"web", "wms", "shop1"} {
		e.expect(req{method: "GET", path: inv, key: k}, 200, "")
	}
	set.key = "shop1" // CreateKey: every scope
	e.expect(set, 200, "")
	if r := e.expect(req{method: "GET", path: inv, key: "shop1"}, 200, ""); r.json["available"] != 5.0 || r.json["held"] != 1.0 {
		t.Fatalf("level: %s", r.body)
	}

	keys, err := httpapi.ListKeys(ctx, e.store, 10)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]httpapi.APIKey{}
	for _, k := range keys {
		byName[k.Name] = k
	}
	if s := byName["web"].Scopes; !slices.Equal(s, []httpapi.Scope{httpapi.ScopeStorefront}) {
		t.Fatalf("web scopes %v", s)
	}
	if s := byName[""].Scopes; !slices.Equal(s, httpapi.ScopesAll) {
		t.Fatalf("CreateKey scopes %v", s)
	}
	if _, _, err := httpapi.CreateKeyWith(ctx, e.store, httpapi.KeySpec{ShopID: 1, Scopes: []httpapi.Scope{"root"}}); err == nil {
		t.Fatal("an unknown scope was accepted")
	}
	if _, err := httpapi.ParseScopes("storefront,all"); err != nil {
		t.Fatal(err)
	}
	// The last use is recorded (in the background, at most once a minute).
	waitFor(t, "last_used_at", func() bool {
		keys, err := httpapi.ListKeys(ctx, e.store, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			if k.Name == "web" && k.LastUsedAt != nil {
				return true
			}
		}
		return false
	})
}

// TestKeyExpiryAndRotation: an expired key is refused; during a rotation
// both the old and the new key work until the old one's grace ends.
func TestKeyExpiryAndRotation(t *testing.T) { t.Parallel(); engines(t, testKeyExpiryAndRotation) }

func testKeyExpiryAndRotation(t *testing.T, engine string) {
	e := newEnvOn(t, engine, envOpts{})
	ctx := context.Background()
	inv := "/v1/shops/1/inventory/7/1"
	get := func(key string) req { return req{method: "GET", path: inv, key: key} }

	key, rec, err := httpapi.CreateKeyWith(ctx, e.store, httpapi.KeySpec{ShopID: 1, Name: "temp", ExpiresAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	e.keys["temp"] = key
	e.expect(get("temp"), 200, "")
	// An hour passes (by the database's clock, which decides expiry).
	e.sqlOn("UPDATE api_keys SET expires_at = clock_timestamp() - interval '1 second' WHERE id = $1",
		"UPDATE api_keys SET expires_at = UTC_TIMESTAMP(6) - INTERVAL 1 SECOND WHERE id = ?", rec.ID)
	e.expect(get("temp"), 401, "key_expired")
	if _, _, err := httpapi.CreateKeyWith(ctx, e.store, httpapi.KeySpec{ShopID: 1, ExpiresAt: time.Now().Add(-time.Minute)}); err == nil {
		t.Fatal("a key expiring in the past was created")
	}

	// Rotation with a grace period: two valid keys for shop 1.
	newKey, newRec, err := httpapi.RotateKey(ctx, e.store, e.keys["shop1"], time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	e.keys["shop1-new"] = newKey
	e.expect(get("shop1"), 200, "")
	e.expect(get("shop1-new"), 200, "")
	if !slices.Equal(newRec.Scopes, httpapi.ScopesAll) || newRec.ShopID != 1 {
		t.Fatalf("rotated key %+v", newRec)
	}
	// Rotating again without grace retires the current key at once.
	newer, _, err := httpapi.RotateKey(ctx, e.store, newKey, 0)
	if err != nil {
		t.Fatal(err)
	}
	e.keys["shop1-newer"] = newer
	e.expect(get("shop1-new"), 401, "key_expired")
	e.expect(get("shop1-newer"), 200, "")
	e.expect(get("shop1"), 200, "") // still within its hour
	if _, _, err := httpapi.RotateKey(ctx, e.store, newKey, 0); !errors.Is(err, httpapi.ErrKeyNotFound) {
		t.Fatalf("rotating an expired key: %v", err)
	}
}

// TestBadKeyFlood: 500 concurrent requests with unknown or malformed keys
// while one shop runs a steady load: the flood gets 401 (or 503 for
// lookups past their own bound), the shop never sees a 503. Its latency
// with and without the flood is logged, not asserted.
func TestBadKeyFlood(t *testing.T) { t.Parallel(); engines(t, testBadKeyFlood) }

func testBadKeyFlood(t *testing.T, engine string) {
	e := newEnvOn(t, engine, envOpts{server: httpapi.Config{KeyCacheTTL: time.Minute}})
	e.stock(1, 7, 100_000)
	hc := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 600, MaxConnsPerHost: 600}}
	e.http = hc
	steady := func(n int) []time.Duration {
		var lat []time.Duration
		for range n {
			start := time.Now()
			r := e.do(req{method: "POST", path: res1, key: "shop1", body: reserveBody(uuid.New(), line(7, 1), "")})
			lat = append(lat, time.Since(start))
			if r.status != 201 {
				t.Errorf("shop 1 during the flood: %d %s", r.status, r.body)
			}
		}
		return lat
	}
	solo := steady(30)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	flood := map[int]int{}
	for i := range 500 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				key := "hf_not-a-key"
				if i%2 == 0 { // well-formed: it needs a lookup
					var b [32]byte
					_, _ = rand.Read(b[:])
					key = "hf_" + base64.RawURLEncoding.EncodeToString(b[:])
				}
				hr, _ := http.NewRequest("GET", e.url+"/v1/shops/1/inventory/7/1", nil)
				hr.Header.Set("Authorization", "Bearer "+key)
				res, err := hc.Do(hr)
				if err != nil {
					continue
				}
				res.Body.Close()
				mu.Lock()
				flood[res.StatusCode]++
				mu.Unlock()
			}
		}()
	}
	waitFor(t, "the flood", func() bool { mu.Lock(); defer mu.Unlock(); return flood[401] > 500 })
	during := steady(30)
	close(stop)
	wg.Wait()
	for st := range flood {
		if st != 401 && st != 503 {
			t.Errorf("flood answered %d", st)
		}
	}
	t.Logf("shop 1 p99 solo %v, during a 500-request bad-key flood %v; flood answers %v", p99(solo), p99(during), flood)
}

func p99(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)*99)/100]
}
