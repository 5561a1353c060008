package servetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/client"
	"github.com/holdfast/holdfast/httpapi"
	"github.com/holdfast/holdfast/mysql"
	"github.com/holdfast/holdfast/mysql/mysqlcluster"
	"github.com/holdfast/holdfast/mysql/mysqlstore"
	"github.com/holdfast/holdfast/mysql/mysqltest"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgstore"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// TestCommerceBlackBox drives the commerce features of issue #30 (bundles,
// pre-orders, merges, availability, compare-and-set stock and bulk import,
// admin cancel and audit, drops) through `holdfast serve`'s HTTP API only,
// as a demanding user would: as many concurrent clients as the server has
// pool connections, more items than one page or scan window, the
// documented maxima and one over. Every answer a client got is checked
// against the final state (2xx: done; 409: nothing changed; a transport
// failure: unknown), and every scenario ends with the invariant over the
// whole database (the engine's CheckInvariant, read-only). HOLDFAST_LONG=1
// runs the larger form (64 clients on a pool of 64, more than a cancel
// scan window of holds).
func TestCommerceBlackBox(t *testing.T) {
	for _, engine := range []string{"postgres", "mariadb"} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			b := startBlackBox(t, engine)
			t.Run("BadInput", b.badInput)
			t.Run("Sizes", b.sizes)
			t.Run("BundleMaxComponentsRace", b.bundleMaxComponentsRace)
			t.Run("BundlesAndSingles", b.bundlesAndSingles)
			t.Run("MergeRaces", b.mergeRaces)
			t.Run("MergeFanIn", b.mergeFanIn)
			t.Run("CASRacingClaims", b.casRacingClaims)
			t.Run("AvailabilityFlashSale", b.availabilityFlashSale)
			t.Run("PreorderRace", b.preorderRace)
			t.Run("CancelRacingClaims", b.cancelRacingClaims)
			t.Run("DropEntries", b.dropEntries)
			t.Run("TightDeadlines", b.tightDeadlines)
			if os.Getenv("HOLDFAST_LONG") != "" {
				t.Run("CancelScanWindow", b.cancelScanWindow)
			}
		})
	}
}

// bbSize is the short or long form's size.
type bbSize struct {
	clients int // concurrent clients, and serve's --max-conns
	holds   int // holds of one item for the cancel scenario
	rounds  int // reservations per client in the mixed scenarios
}

func blackBoxSize() bbSize {
	if os.Getenv("HOLDFAST_LONG") != "" {
		// More held holds than one cancel call examines (5000).
		return bbSize{clients: 64, holds: 5200, rounds: 12}
	}
	return bbSize{clients: 24, holds: 260, rounds: 4}
}

// blackBox is one running server and the keys to drive it.
type blackBox struct {
	engine   string
	size     bbSize
	url      string
	key      string // shop 1, every scope
	admin    string
	hc       *http.Client
	shop     int64
	checkInv func(context.Context) (*holdfast.InvariantReport, error)
}

func startBlackBox(t *testing.T, engine string) *blackBox {
	t.Helper()
	ctx := context.Background()
	b := &blackBox{engine: engine, size: blackBoxSize(), shop: 1}
	b.hc = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxIdleConns: 256}}
	conns := strconv.Itoa(b.size.clients)
	var st httpapi.Store
	switch engine {
	case "postgres":
		db := pgtest.DB(t, 4)
		st = pgstore.Service(db.Pool)
		c, err := postgres.New(db.Pool, holdfast.Config{})
		if err != nil {
			t.Fatal(err)
		}
		b.checkInv = c.CheckInvariant
		b.url = serve(t, db.URL, "--max-conns", conns, "--log-errors-only", "--request-timeout", blackBoxRequestTimeout).url
	default:
		if _, _, err := mysqlcluster.FindBinaries(); err != nil {
			t.Skip(err)
		}
		db := mysqltest.DB(t, 4)
		st = mysqlstore.Service(db.DB)
		c, err := mysql.New(db.DB, holdfast.Config{})
		if err != nil {
			t.Fatal(err)
		}
		b.checkInv = c.CheckInvariant
		u := (&url.URL{Scheme: "mysql", User: url.UserPassword(db.Config.User, db.Config.Passwd), Host: db.Config.Addr, Path: "/" + db.Config.DBName}).String()
		b.url = serve(t, u, "--max-conns", conns, "--log-errors-only", "--request-timeout", blackBoxRequestTimeout).url
	}
	var err error
	if b.key, _, err = httpapi.CreateKey(ctx, st, b.shop, false); err != nil {
		t.Fatal(err)
	}
	if b.admin, _, err = httpapi.CreateKey(ctx, st, 0, true); err != nil {
		t.Fatal(err)
	}
	return b
}

// answer is one HTTP exchange; err is a transport failure (outcome unknown).
type answer struct {
	status int
	body   []byte
	err    error
}

func (a answer) String() string {
	if a.err != nil {
		return "transport error: " + a.err.Error()
	}
	return fmt.Sprintf("%d %s", a.status, bytes.TrimSpace(a.body))
}

type apiError struct {
	Error struct {
		Code  string `json:"code"`
		Field string `json:"field"`
	} `json:"error"`
}

func (a answer) code() string {
	var e apiError
	_ = json.Unmarshal(a.body, &e)
	return e.Error.Code
}

func (a answer) field() string {
	var e apiError
	_ = json.Unmarshal(a.body, &e)
	return e.Error.Field
}

func (a answer) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(a.body, v); err != nil {
		t.Fatalf("decode %s: %v", a, err)
	}
}

// do sends one request; body is a string (sent as is) or a value (JSON).
func (b *blackBox) do(method, path, key string, body any) answer {
	var rd io.Reader
	switch v := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(v)
	default:
		j, _ := json.Marshal(v)
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, b.url+path, rd)
	if err != nil {
		return answer{err: err}
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := b.hc.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer res.Body.Close()
	rb, err := io.ReadAll(res.Body)
	if err != nil {
		return answer{status: res.StatusCode, err: err}
	}
	return answer{status: res.StatusCode, body: rb}
}

// doBy is do with an X-Request-Timeout header.
func (b *blackBox) doBy(timeout, method, path, key string, body any) answer {
	j, _ := json.Marshal(body)
	req, err := http.NewRequest(method, b.url+path, bytes.NewReader(j))
	if err != nil {
		return answer{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("X-Request-Timeout", timeout)
	res, err := b.hc.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer res.Body.Close()
	rb, err := io.ReadAll(res.Body)
	return answer{status: res.StatusCode, body: rb, err: err}
}

// must is do that fails the test unless the answer has status want.
func (b *blackBox) must(t *testing.T, want int, method, path, key string, body any) answer {
	t.Helper()
	a := b.do(method, path, key, body)
	if a.err != nil || a.status != want {
		t.Fatalf("%s %s: %s, want %d", method, path, a, want)
	}
	return a
}

func (b *blackBox) shopPath(format string, args ...any) string {
	return fmt.Sprintf("/v1/shops/%d", b.shop) + fmt.Sprintf(format, args...)
}

func (b *blackBox) setStock(t *testing.T, item, loc int64, available int) {
	t.Helper()
	b.must(t, 200, "PUT", b.shopPath("/inventory/%d/%d", item, loc), b.key, map[string]any{"available": available, "reason": "stocktake"})
}

type bbLine struct {
	ItemID     int64 `json:"item_id"`
	LocationID int64 `json:"location_id"`
	Quantity   int   `json:"quantity"`
	Preordered int   `json:"preordered,omitempty"`
}

type bbHold struct {
	CheckoutID string   `json:"checkout_id"`
	Status     string   `json:"status"`
	Lines      []bbLine `json:"lines"`
	MergedInto string   `json:"merged_into"`
	Position   int      `json:"position"`
}

type bbLevel struct {
	Available int  `json:"available"`
	Held      int  `json:"held"`
	Sellable  int  `json:"sellable"`
	Over      bool `json:"over_committed"`
}

func (b *blackBox) level(t *testing.T, item, loc int64) bbLevel {
	t.Helper()
	var l bbLevel
	b.must(t, 200, "GET", b.shopPath("/inventory/%d/%d", item, loc), b.key, nil).decode(t, &l)
	return l
}

func (b *blackBox) reserve(checkout string, lines []bbLine, extra map[string]any) answer {
	body := map[string]any{"checkout_id": checkout, "lines": lines}
	for k, v := range extra {
		body[k] = v
	}
	return b.do("POST", b.shopPath("/reservations"), b.key, body)
}

func (b *blackBox) hold(t *testing.T, checkout string) (answer, bbHold) {
	t.Helper()
	a := b.do("GET", b.shopPath("/reservations/%s", checkout), b.key, nil)
	var h bbHold
	if a.err != nil {
		t.Fatalf("read %s: %v", checkout, a.err)
	}
	if a.status == 200 || a.status == 202 {
		a.decode(t, &h)
	}
	return a, h
}

// invariant checks the whole database, as the scenarios' last step.
func (b *blackBox) invariant(t *testing.T) {
	t.Helper()
	rep, err := b.checkInv(context.Background())
	if err != nil {
		t.Fatalf("CheckInvariant: %v", err)
	}
	if !rep.OK() {
		t.Fatalf("invariant: %s", rep)
	}
}

// parallel runs f(0..n-1) at once and waits for all of them.
func parallel(n int, f func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			f(i)
		}(i)
	}
	close(start)
	wg.Wait()
}

// outcomeOK reports whether an answer is a definite outcome the scenario
// may account for: a 2xx or a 4xx. 5xx and transport failures are
// outcome-unknown; the scenarios here run without faults, so they are
// reported as failures of their own (nothing should time out).
func outcomeKnown(t *testing.T, what string, a answer) bool {
	t.Helper()
	if a.err != nil || a.status >= 500 {
		t.Errorf("%s: outcome unknown without any fault injected: %s", what, a)
		return false
	}
	return true
}

func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.TrimSpace(string(b))
}

func sumLines(lines []bbLine, item int64) int {
	n := 0
	for _, l := range lines {
		if l.ItemID == item {
			n += l.Quantity
		}
	}
	return n
}

// ---------------------------------------------------------------------
// Bad input: every bad field of every new route answers 4xx with a code
// and the field, and changes nothing.

var requestID = regexp.MustCompile(`"request_id":"[^"]*"`)

func (b *blackBox) snapshot(t *testing.T, items []int64) string {
	t.Helper()
	var sb strings.Builder
	for _, it := range items {
		sb.WriteString(b.do("GET", b.shopPath("/inventory/%d/1", it), b.key, nil).String())
		sb.WriteString(b.do("GET", b.shopPath("/inventory/%d/1/preorder", it), b.key, nil).String())
		sb.WriteString(b.do("GET", b.shopPath("/inventory/%d/1/drop", it), b.key, nil).String())
		sb.WriteString(b.do("GET", b.shopPath("/bundles/%d", it), b.key, nil).String())
		sb.WriteString("\n")
	}
	sb.WriteString(b.do("GET", b.shopPath("/holds?limit=500"), b.key, nil).String())
	sb.WriteString(b.do("GET", b.shopPath("/audit?limit=500"), b.admin, nil).String())
	// Request ids differ per answer; the state does not.
	return requestID.ReplaceAllString(sb.String(), `"request_id":"…"`)
}

func (b *blackBox) badInput(t *testing.T) {
	const (
		stocked = 101 // stocked item
		other   = 102 // stocked item
		bundle  = 150 // a bundle of 101 and 102
		plain   = 160 // neither stocked nor a bundle
	)
	b.setStock(t, stocked, 1, 10)
	b.setStock(t, other, 1, 10)
	b.must(t, 200, "PUT", b.shopPath("/bundles/%d", bundle), b.key, map[string]any{"components": []map[string]any{{"item_id": stocked, "quantity": 1}, {"item_id": other, "quantity": 2}}})
	b.must(t, 200, "PUT", b.shopPath("/inventory/%d/1/preorder", other), b.key, map[string]any{"cap": 3, "expected_at": "2031-01-01T00:00:00Z"})
	guest, customer := uuid.NewString(), uuid.NewString()
	b.must(t, 201, "POST", b.shopPath("/reservations"), b.key, map[string]any{"checkout_id": guest, "lines": []bbLine{{ItemID: stocked, LocationID: 1, Quantity: 1}}})
	b.must(t, 201, "POST", b.shopPath("/reservations"), b.key, map[string]any{"checkout_id": customer, "lines": []bbLine{{ItemID: stocked, LocationID: 1, Quantity: 1}}})

	comps := func(n int) []map[string]any {
		var c []map[string]any
		for i := 0; i < n; i++ {
			c = append(c, map[string]any{"item_id": 200 + i, "quantity": 1})
		}
		return c
	}
	future := time.Now().UTC().Add(31 * 24 * time.Hour).Format(time.RFC3339)
	past := time.Now().UTC().Add(-2 * time.Minute).Format(time.RFC3339)
	manyIDs := func(n int) string {
		var s []string
		for i := 1; i <= n; i++ {
			s = append(s, strconv.Itoa(i))
		}
		return strings.Join(s, ",")
	}
	entries := func(n int) []map[string]any {
		var e []map[string]any
		for i := 0; i < n; i++ {
			e = append(e, map[string]any{"item_id": 7000 + i, "location_id": 1, "available": 1})
		}
		return e
	}
	bundlePath := b.shopPath("/bundles/%d", bundle)
	preorderPath := b.shopPath("/inventory/%d/1/preorder", other)
	dropPath := b.shopPath("/inventory/%d/1/drop", stocked)
	mergePath := b.shopPath("/reservations/%s/merge", guest)
	importPath := b.shopPath("/inventory")
	cancelPath := b.shopPath("/holds/cancel")
	cases := []struct {
		name         string
		method, path string
		admin        bool
		body         any
		field        string // the field the answer must name
	}{
		// bundles
		{"bundle no components", "PUT", bundlePath, false, `{"components": []}`, "components"},
		{"bundle 21 components", "PUT", bundlePath, false, map[string]any{"components": comps(21)}, "components"},
		{"bundle quantity 0", "PUT", bundlePath, false, `{"components": [{"item_id": 101, "quantity": 0}]}`, "components[0].quantity"},
		{"bundle quantity negative", "PUT", bundlePath, false, `{"components": [{"item_id": 101, "quantity": -1}]}`, "components[0].quantity"},
		{"bundle quantity string", "PUT", bundlePath, false, `{"components": [{"item_id": 101, "quantity": "1"}]}`, "components[0].quantity"},
		{"bundle component id 0", "PUT", bundlePath, false, `{"components": [{"item_id": 0, "quantity": 1}]}`, "components[0].item_id"},
		{"bundle own component", "PUT", bundlePath, false, `{"components": [{"item_id": 150, "quantity": 1}]}`, "components[0].item_id"},
		{"bundle nested", "PUT", b.shopPath("/bundles/%d", plain), false, `{"components": [{"item_id": 150, "quantity": 1}]}`, "components[0].item_id"},
		{"bundle duplicate component", "PUT", bundlePath, false, `{"components": [{"item_id": 101, "quantity": 1}, {"item_id": 101, "quantity": 1}]}`, "components[1].item_id"},
		{"stocked item as bundle", "PUT", b.shopPath("/bundles/%d", stocked), false, `{"components": [{"item_id": 160, "quantity": 1}]}`, "item_id"},
		{"bundle unknown member", "PUT", bundlePath, false, `{"components": [{"item_id": 101, "quantity": 1}], "name": "kit"}`, "name"},
		{"bundle path id 0", "PUT", b.shopPath("/bundles/0"), false, `{"components": [{"item_id": 101, "quantity": 1}]}`, "item_id"},
		{"bundle path id text", "PUT", b.shopPath("/bundles/abc"), false, `{"components": [{"item_id": 101, "quantity": 1}]}`, "item_id"},
		{"bundle missing components", "PUT", bundlePath, false, `{}`, "components"},
		// pre-orders
		{"preorder cap negative", "PUT", preorderPath, false, `{"cap": -1, "expected_at": "2031-01-01T00:00:00Z"}`, "cap"},
		{"preorder cap too large", "PUT", preorderPath, false, `{"cap": 1000001, "expected_at": "2031-01-01T00:00:00Z"}`, "cap"},
		{"preorder no expected_at", "PUT", preorderPath, false, `{"cap": 5}`, "expected_at"},
		{"preorder expected_at garbage", "PUT", preorderPath, false, `{"cap": 5, "expected_at": "soon"}`, "expected_at"},
		{"preorder cap fraction", "PUT", preorderPath, false, `{"cap": 1.5, "expected_at": "2031-01-01T00:00:00Z"}`, "cap"},
		{"preorder unknown member", "PUT", preorderPath, false, `{"cap": 5, "expected_at": "2031-01-01T00:00:00Z", "when": 1}`, "when"},
		// drops
		{"drop window 0", "PUT", dropPath, false, `{"window_seconds": 0}`, "window_seconds"},
		{"drop window too long", "PUT", dropPath, false, `{"window_seconds": 86401}`, "window_seconds"},
		{"drop starts too far ahead", "PUT", dropPath, false, `{"window_seconds": 5, "starts_at": "` + future + `"}`, "starts_at"},
		{"drop starts too far back", "PUT", dropPath, false, `{"window_seconds": 5, "starts_at": "` + past + `"}`, "starts_at"},
		{"drop starts garbage", "PUT", dropPath, false, `{"window_seconds": 5, "starts_at": "noon"}`, "starts_at"},
		{"drop missing window", "PUT", dropPath, false, `{}`, "window_seconds"},
		// merges
		{"merge no into", "POST", mergePath, false, `{}`, "into"},
		{"merge into not a UUID", "POST", mergePath, false, `{"into": "cart-7"}`, "into"},
		{"merge into nil UUID", "POST", mergePath, false, `{"into": "00000000-0000-0000-0000-000000000000"}`, "into"},
		{"merge into itself", "POST", mergePath, false, `{"into": "` + guest + `"}`, "into"},
		{"merge into number", "POST", mergePath, false, `{"into": 7}`, "into"},
		{"merge bad path checkout", "POST", b.shopPath("/reservations/xyz/merge"), false, `{"into": "` + customer + `"}`, "checkout_id"},
		// availability
		{"availability no items", "GET", b.shopPath("/availability?locations=1"), false, nil, "items"},
		{"availability item text", "GET", b.shopPath("/availability?items=1,x&locations=1"), false, nil, "items[1]"},
		{"availability item 0", "GET", b.shopPath("/availability?items=0&locations=1"), false, nil, "items[0]"},
		{"availability duplicate item", "GET", b.shopPath("/availability?items=5,5&locations=1"), false, nil, "items[1]"},
		{"availability 101 items", "GET", b.shopPath("/availability?items=%s&locations=1", manyIDs(101)), false, nil, "items"},
		{"availability 17 locations", "GET", b.shopPath("/availability?items=1&locations=%s", manyIDs(17)), false, nil, "locations"},
		{"availability no order", "GET", b.shopPath("/availability?items=1"), false, nil, "locations"},
		{"availability location text", "GET", b.shopPath("/availability?items=1&locations=a"), false, nil, "locations[0]"},
		// compare-and-set and import
		{"set expected negative", "PUT", b.shopPath("/inventory/%d/1", stocked), false, `{"available": 3, "expected_available": -1, "reason": "x"}`, "expected_available"},
		{"set expected too large", "PUT", b.shopPath("/inventory/%d/1", stocked), false, `{"available": 3, "expected_available": 2147483648, "reason": "x"}`, "expected_available"},
		{"adjust expected text", "POST", b.shopPath("/inventory/%d/1/adjust", stocked), false, `{"delta": 1, "expected_available": "10", "reason": "x"}`, "expected_available"},
		{"import one entry too many", "PUT", importPath, false, map[string]any{"import_id": "big", "reason": "sync", "entries": entries(holdfast.StockImportEntriesMax + 1)}, "entries"},
		{"import no entries", "PUT", importPath, false, `{"import_id": "none", "reason": "sync", "entries": []}`, "entries"},
		{"import duplicate key", "PUT", importPath, false, `{"import_id": "dup", "reason": "sync", "entries": [{"item_id": 7001, "location_id": 1, "available": 1}, {"item_id": 7001, "location_id": 1, "available": 2}]}`, "entries[1]"},
		{"import available negative", "PUT", importPath, false, `{"import_id": "neg", "reason": "sync", "entries": [{"item_id": 7001, "location_id": 1, "available": 1}, {"item_id": 7002, "location_id": 1, "available": -1}]}`, "entries[1].available"},
		{"import expected negative", "PUT", importPath, false, `{"import_id": "negx", "reason": "sync", "entries": [{"item_id": 7001, "location_id": 1, "available": 1, "expected_available": -1}]}`, "entries[0].expected_available"},
		{"import item 0", "PUT", importPath, false, `{"import_id": "zero", "reason": "sync", "entries": [{"item_id": 0, "location_id": 1, "available": 1}]}`, "entries[0].item_id"},
		{"import location 0", "PUT", importPath, false, `{"import_id": "zloc", "reason": "sync", "entries": [{"item_id": 7001, "location_id": 0, "available": 1}]}`, "entries[0].location_id"},
		{"import id too long", "PUT", importPath, false, map[string]any{"import_id": strings.Repeat("i", 121), "reason": "sync", "entries": entries(1)}, "import_id"},
		{"import no reason", "PUT", importPath, false, `{"import_id": "nor", "entries": [{"item_id": 7001, "location_id": 1, "available": 1}]}`, "reason"},
		{"import entry unknown member", "PUT", importPath, false, `{"import_id": "unk", "reason": "sync", "entries": [{"item_id": 7001, "location_id": 1, "available": 1, "sku": "x"}]}`, "entries[0].sku"},
		// admin cancel
		{"cancel no reason", "POST", cancelPath, true, `{"item_id": 101}`, "reason"},
		{"cancel no filter", "POST", cancelPath, true, `{"reason": "x"}`, "filter"},
		{"cancel limit 0", "POST", cancelPath, true, `{"item_id": 101, "reason": "x", "limit": 0}`, "limit"},
		{"cancel limit 501", "POST", cancelPath, true, `{"item_id": 101, "reason": "x", "limit": 501}`, "limit"},
		{"cancel item 0", "POST", cancelPath, true, `{"item_id": 0, "reason": "x"}`, "item_id"},
		{"cancel older than negative", "POST", cancelPath, true, `{"older_than_seconds": -1, "reason": "x"}`, "older_than_seconds"},
		{"cancel bad buyer", "POST", cancelPath, true, `{"buyer_id": "has space", "reason": "x"}`, "buyer_id"},
		{"cancel reason too long", "POST", cancelPath, true, map[string]any{"item_id": 101, "reason": strings.Repeat("r", 501)}, "reason"},
		{"cancel bad cursor", "POST", cancelPath, true, `{"item_id": 101, "reason": "x", "cursor": "nope"}`, "cursor"},
		// audit
		{"audit limit 0", "GET", b.shopPath("/audit?limit=0"), true, nil, "limit"},
		{"audit limit text", "GET", b.shopPath("/audit?limit=x"), true, nil, "limit"},
		{"audit bad cursor", "GET", b.shopPath("/audit?cursor=nope"), true, nil, "cursor"},
		{"audit unknown parameter", "GET", b.shopPath("/audit?actor=me"), true, nil, "actor"},
		{"audit key text", "GET", b.shopPath("/audit?key=x"), true, nil, "key"},
	}
	items := []int64{stocked, other, bundle, plain, 7000, 7001, 7002, 7999, 8000}
	before := b.snapshot(t, items)
	for _, c := range cases {
		key := b.key
		if c.admin {
			key = b.admin
		}
		a := b.do(c.method, c.path, key, c.body)
		if a.err != nil || a.status < 400 || a.status >= 500 || a.code() == "" || a.field() != c.field {
			t.Errorf("%s: %s %s: %s; want 4xx with a code and field %q", c.name, c.method, c.path, a, c.field)
		}
	}
	if after := b.snapshot(t, items); after != before {
		t.Errorf("bad input changed the state:\nbefore %s\nafter  %s", before, after)
	}
	b.invariant(t)
}

// ---------------------------------------------------------------------
// Sizes: the documented maxima and one over.

// blackBoxRequestTimeout is serve's --request-timeout in these tests: long
// enough for the documented maxima (a 500-entry import) on a machine as
// loaded as a test run beside other suites makes it, where serve's default
// 10 s was seen to run out (10.0 s at load 13); the time is logged, not
// asserted (docs/PERFORMANCE.md measures it).
const blackBoxRequestTimeout = "2m"

func (b *blackBox) sizes(t *testing.T) {
	// Bulk import: the most entries apply; one more changes nothing.
	const max = holdfast.StockImportEntriesMax
	var e []map[string]any
	for i := 0; i < max+1; i++ {
		e = append(e, map[string]any{"item_id": 10000 + i, "location_id": 1, "available": 5 + i%7})
	}
	imp := map[string]any{"import_id": "size-max", "reason": "sync", "entries": e[:max]}
	var res struct {
		Replayed bool `json:"replayed"`
		Levels   []struct {
			ItemID    int64 `json:"item_id"`
			Available int   `json:"available"`
		} `json:"levels"`
	}
	began := time.Now()
	a := b.do("PUT", b.shopPath("/inventory"), b.key, imp)
	took := time.Since(began)
	t.Logf("%s: import of %d entries answered %d in %v (load %s)", b.engine, max, a.status, took.Round(time.Millisecond), loadAvg())
	if a.err != nil || a.status != 200 {
		// The documented maximum must apply (its time is logged above:
		// speed is measured, not asserted — serve runs here with
		// blackBoxRequestTimeout). Keep going with imports of 100, so
		// the checks below still run.
		t.Errorf("import of %d entries (the documented maximum): %s after %v", max, a, took)
		if a.status == 500 && a.code() != "outcome_unknown" {
			t.Errorf("a failed import must answer outcome_unknown: %s", a)
		}
		for c := 0; c < max/100; c++ {
			b.must(t, 200, "PUT", b.shopPath("/inventory"), b.key, map[string]any{"import_id": fmt.Sprintf("size-100-%d", c), "reason": "sync", "entries": e[c*100 : c*100+100]})
		}
	} else {
		a.decode(t, &res)
		if res.Replayed || len(res.Levels) != max {
			t.Fatalf("import of %d: replayed %v, %d levels", max, res.Replayed, len(res.Levels))
		}
		for i, l := range res.Levels {
			if l.ItemID != int64(10000+i) || l.Available != 5+i%7 {
				t.Fatalf("import level %d: %+v", i, l)
			}
		}
		a = b.must(t, 200, "PUT", b.shopPath("/inventory"), b.key, imp)
		a.decode(t, &res)
		if !res.Replayed {
			t.Fatalf("import retry not a replay: %s", a)
		}
	}
	// Every entry applied, once: the level of the last entry.
	if l := b.level(t, 10000+max-1, 1); l.Available != 5+(max-1)%7 {
		t.Fatalf("item %d after the import: %+v", 10000+max-1, l)
	}
	over := map[string]any{"import_id": "size-over", "reason": "sync", "entries": e}
	a = b.do("PUT", b.shopPath("/inventory"), b.key, over)
	if a.status != 422 || a.field() != "entries" {
		t.Fatalf("import of %d: %s, want 422 on entries", max+1, a)
	}
	if a := b.do("GET", b.shopPath("/inventory/%d/1", 10000+max), b.key, nil); a.status == 200 && strings.Contains(string(a.body), fmt.Sprintf(`"available":%d`, 5+max%7)) {
		t.Fatalf("the refused import set item %d: %s", 10000+max, a)
	}

	// Availability for the most items (100), all stocked by the import, and
	// one over.
	var ids []string
	for i := 0; i < 101; i++ {
		ids = append(ids, strconv.Itoa(10000+i))
	}
	var av struct {
		Items []struct {
			ItemID   int64 `json:"item_id"`
			Sellable int   `json:"sellable"`
		} `json:"items"`
	}
	b.must(t, 200, "GET", b.shopPath("/availability?locations=1&items=%s", strings.Join(ids[:100], ",")), b.key, nil).decode(t, &av)
	if len(av.Items) != 100 {
		t.Fatalf("availability of 100 items: %d items", len(av.Items))
	}
	for i, it := range av.Items {
		if it.ItemID != int64(10000+i) || it.Sellable != 5+i%7 {
			t.Fatalf("availability item %d: %+v, want sellable %d", i, it, 5+i%7)
		}
	}
	if a := b.do("GET", b.shopPath("/availability?locations=1&items=%s", strings.Join(ids, ",")), b.key, nil); a.status != 422 || a.field() != "items" {
		t.Fatalf("availability of 101 items: %s", a)
	}

	// A bundle of the most components (20) reserves, claims and releases
	// per component; 21 is refused.
	var comps []map[string]any
	for i := 0; i < 21; i++ {
		comps = append(comps, map[string]any{"item_id": 10000 + i, "quantity": 1 + i%3})
	}
	b.must(t, 200, "PUT", b.shopPath("/bundles/%d", 12000), b.key, map[string]any{"components": comps[:20]})
	if a := b.do("PUT", b.shopPath("/bundles/%d", 12001), b.key, map[string]any{"components": comps}); a.status != 422 {
		t.Fatalf("bundle of 21 components: %s", a)
	}
	if a := b.do("GET", b.shopPath("/bundles/%d", 12001), b.key, nil); a.status != 404 {
		t.Fatalf("refused bundle defined: %s", a)
	}
	co := uuid.NewString()
	var h bbHold
	b.must(t, 201, "POST", b.shopPath("/reservations"), b.key, map[string]any{"checkout_id": co, "lines": []bbLine{{ItemID: 12000, LocationID: 1, Quantity: 1}}}).decode(t, &h)
	if len(h.Lines) != 20 {
		t.Fatalf("bundle of 20 held %d lines: %+v", len(h.Lines), h.Lines)
	}
	b.must(t, 200, "POST", b.shopPath("/reservations/%s/claim", co), b.key, nil)
	for i := 0; i < 20; i++ {
		if l := b.level(t, int64(10000+i), 1); l.Available != 5+i%7-(1+i%3) || l.Held != 0 {
			t.Fatalf("component %d after the claim: %+v", 10000+i, l)
		}
	}
	b.invariant(t)
}

// ---------------------------------------------------------------------
// A bundle of 20 components, each with stock for k bundles, reserved by
// every client at once: exactly k holds, the rest insufficient_stock, and
// the refused hold nothing.

func (b *blackBox) bundleMaxComponentsRace(t *testing.T) {
	n := b.size.clients
	k := n / 3
	const base, bundle = 13000, 13100
	var comps []map[string]any
	for i := 0; i < 20; i++ {
		b.setStock(t, int64(base+i), 1, k*(1+i%2))
		comps = append(comps, map[string]any{"item_id": base + i, "quantity": 1 + i%2})
	}
	b.must(t, 200, "PUT", b.shopPath("/bundles/%d", bundle), b.key, map[string]any{"components": comps})
	answers := make([]answer, n)
	ids := make([]string, n)
	parallel(n, func(i int) {
		ids[i] = uuid.NewString()
		answers[i] = b.reserve(ids[i], []bbLine{{ItemID: bundle, LocationID: 1, Quantity: 1}}, nil)
	})
	held := 0
	for i, a := range answers {
		if !outcomeKnown(t, "reserve bundle", a) {
			continue
		}
		r, h := b.hold(t, ids[i])
		switch {
		case a.status == 201:
			held++
			if r.status != 200 || h.Status != "held" || len(h.Lines) != 20 {
				t.Errorf("201 bundle hold %s reads %s", ids[i], r)
			}
		case a.status == 409 && a.code() == "insufficient_stock":
			if r.status != 404 {
				t.Errorf("refused bundle hold %s reads %s", ids[i], r)
			}
		default:
			t.Errorf("reserve bundle: %s", a)
		}
	}
	if held != k {
		t.Errorf("%d of %d bundle reservations held, want exactly %d", held, n, k)
	}
	for i := 0; i < 20; i++ {
		if l := b.level(t, int64(base+i), 1); l.Held != held*(1+i%2) || l.Sellable != 0 {
			t.Errorf("component %d: %+v with %d bundles held", base+i, l, held)
		}
	}
	b.invariant(t)
}

// ---------------------------------------------------------------------
// Bundles whose components are also bought singly, by every client at
// once, each then claiming, releasing or keeping its hold. Final levels
// must be exactly what the answers say.

func (b *blackBox) bundlesAndSingles(t *testing.T) {
	n := b.size.clients
	const a1, a2, a3, bundle = 14001, 14002, 14003, 14100
	stock := n * b.size.rounds / 2
	for _, it := range []int64{a1, a2, a3} {
		b.setStock(t, it, 1, stock)
	}
	b.must(t, 200, "PUT", b.shopPath("/bundles/%d", bundle), b.key, map[string]any{"components": []map[string]any{{"item_id": a1, "quantity": 1}, {"item_id": a2, "quantity": 2}, {"item_id": a3, "quantity": 1}}})
	type rec struct {
		id              string
		lines           []bbLine
		reserve, finish answer
		act             int // 0 keep, 1 claim, 2 release
	}
	recs := make([][]rec, n)
	parallel(n, func(i int) {
		rng := rand.New(rand.NewSource(int64(i)))
		for r := 0; r < b.size.rounds; r++ {
			var lines []bbLine
			switch rng.Intn(3) {
			case 0:
				lines = []bbLine{{ItemID: bundle, LocationID: 1, Quantity: 1 + rng.Intn(2)}}
			case 1:
				lines = []bbLine{{ItemID: a2, LocationID: 1, Quantity: 1 + rng.Intn(2)}}
			default:
				lines = []bbLine{{ItemID: bundle, LocationID: 1, Quantity: 1}, {ItemID: a3, LocationID: 1, Quantity: 1}}
			}
			x := rec{id: uuid.NewString(), lines: lines, act: rng.Intn(3)}
			x.reserve = b.reserve(x.id, lines, nil)
			if x.reserve.status == 201 {
				switch x.act {
				case 1:
					x.finish = b.do("POST", b.shopPath("/reservations/%s/claim", x.id), b.key, nil)
				case 2:
					x.finish = b.do("POST", b.shopPath("/reservations/%s/release", x.id), b.key, nil)
				}
			}
			recs[i] = append(recs[i], x)
		}
	})
	claimed := map[int64]int{}
	held := map[int64]int{}
	for _, rs := range recs {
		for _, x := range rs {
			if !outcomeKnown(t, "reserve", x.reserve) {
				continue
			}
			r, h := b.hold(t, x.id)
			if x.reserve.status != 201 {
				if x.reserve.status != 409 || r.status != 404 {
					t.Errorf("reserve %v: %s; reads %s", x.lines, x.reserve, r)
				}
				continue
			}
			// The hold's lines are the components × the line's quantity,
			// summed with the singles of the same item.
			expand := map[int64]int{}
			for _, l := range x.lines {
				if l.ItemID == bundle {
					expand[a1] += l.Quantity
					expand[a2] += 2 * l.Quantity
					expand[a3] += l.Quantity
				} else {
					expand[l.ItemID] += l.Quantity
				}
			}
			var got bbHold
			x.reserve.decode(t, &got)
			for _, it := range []int64{a1, a2, a3} {
				if sumLines(got.Lines, it) != expand[it] || sumLines(h.Lines, it) != expand[it] {
					t.Errorf("reserve %v answered lines %v, reads %v: want %v", x.lines, got.Lines, h.Lines, expand)
					break
				}
			}
			want := "held"
			if x.act != 0 {
				if !outcomeKnown(t, "finish", x.finish) {
					continue
				}
				if x.finish.status != 200 {
					t.Errorf("finish %d of %s: %s", x.act, x.id, x.finish)
					continue
				}
				want = map[int]string{1: "claimed", 2: "released"}[x.act]
			}
			if h.Status != want {
				t.Errorf("hold %s answered %s, reads %s", x.id, want, r)
			}
			for _, l := range h.Lines {
				switch want {
				case "claimed":
					claimed[l.ItemID] += l.Quantity
				case "held":
					held[l.ItemID] += l.Quantity
				}
			}
		}
	}
	for _, it := range []int64{a1, a2, a3} {
		l := b.level(t, it, 1)
		if l.Available != stock-claimed[it] || l.Held != held[it] {
			t.Errorf("item %d: %+v; the answers say available %d, held %d", it, l, stock-claimed[it], held[it])
		}
	}
	// Availability of the bundle agrees with its components right after.
	var av struct {
		Items []struct {
			Sellable int `json:"sellable"`
		} `json:"items"`
	}
	b.must(t, 200, "GET", b.shopPath("/availability?items=%d&locations=1", bundle), b.key, nil).decode(t, &av)
	s1, s2, s3 := b.level(t, a1, 1).Sellable, b.level(t, a2, 1).Sellable, b.level(t, a3, 1).Sellable
	want := min(s1, s2/2, s3)
	if av.Items[0].Sellable != want {
		t.Errorf("bundle availability %d, components allow %d", av.Items[0].Sellable, want)
	}
	if want > 0 {
		b.must(t, 201, "POST", b.shopPath("/reservations"), b.key, map[string]any{"checkout_id": uuid.NewString(), "lines": []bbLine{{ItemID: bundle, LocationID: 1, Quantity: want}}})
	}
	if a := b.reserve(uuid.NewString(), []bbLine{{ItemID: bundle, LocationID: 1, Quantity: 1}}, nil); a.status != 409 {
		t.Errorf("a bundle beyond availability: %s", a)
	}
	b.invariant(t)
}

// ---------------------------------------------------------------------
// Merges racing claims of the source, claims of the destination, and the
// source's expiry.

func (b *blackBox) mergeRaces(t *testing.T) {
	pairs := b.size.clients
	const item = 15001
	stock := pairs * 4
	b.setStock(t, item, 1, stock)
	type pair struct {
		guest, customer string
		kind            int // 0: merge vs claim guest; 1: merge vs claim customer; 2: merge at the guest's expiry
		merge, claim    answer
		expiresAt       time.Time
	}
	ps := make([]pair, pairs)
	for i := range ps {
		ps[i] = pair{guest: uuid.NewString(), customer: uuid.NewString(), kind: i % 3}
		ttl := 900
		if ps[i].kind == 2 {
			ttl = 1
		}
		var h struct {
			ExpiresAt time.Time `json:"expires_at"`
		}
		b.must(t, 201, "POST", b.shopPath("/reservations"), b.key, map[string]any{"checkout_id": ps[i].guest, "ttl_seconds": ttl, "lines": []bbLine{{ItemID: item, LocationID: 1, Quantity: 2}}}).decode(t, &h)
		ps[i].expiresAt = h.ExpiresAt
		b.must(t, 201, "POST", b.shopPath("/reservations"), b.key, map[string]any{"checkout_id": ps[i].customer, "lines": []bbLine{{ItemID: item, LocationID: 1, Quantity: 1}}})
	}
	parallel(2*pairs, func(j int) {
		p := &ps[j/2]
		if j%2 == 0 {
			if p.kind == 2 {
				// Aim the merge at the guest's expiry (the server's clock is this host's).
				time.Sleep(time.Until(p.expiresAt)) // schedules the race; nothing is awaited
			}
			p.merge = b.do("POST", b.shopPath("/reservations/%s/merge", p.guest), b.key, map[string]any{"into": p.customer})
			return
		}
		switch p.kind {
		case 0:
			p.claim = b.do("POST", b.shopPath("/reservations/%s/claim", p.guest), b.key, nil)
		case 1:
			p.claim = b.do("POST", b.shopPath("/reservations/%s/claim", p.customer), b.key, nil)
		}
	})
	claimedUnits := 0
	counts := map[string]int{}
	for _, p := range ps {
		if !outcomeKnown(t, "merge", p.merge) || (p.kind != 2 && !outcomeKnown(t, "claim", p.claim)) {
			continue
		}
		_, g := b.hold(t, p.guest)
		_, c := b.hold(t, p.customer)
		key := fmt.Sprintf("kind %d merge %d %s", p.kind, p.merge.status, p.merge.code())
		counts[key]++
		merged := p.merge.status == 200
		if merged {
			var dest bbHold
			p.merge.decode(t, &dest)
			if g.Status != "released" || g.MergedInto != p.customer || dest.CheckoutID != p.customer || sumLines(dest.Lines, item) != 3 {
				t.Errorf("%s: merged, but guest %+v, answer %s", key, g, p.merge)
			}
		} else {
			switch {
			case p.merge.status == 409 && p.merge.code() == "hold_claimed" && p.kind == 0,
				p.merge.status == 409 && p.merge.code() == "merge_into_ended" && p.kind == 1,
				p.merge.status == 410 && p.merge.code() == "hold_expired" && p.kind == 2:
			default:
				t.Errorf("%s: unexpected answer %s", key, p.merge)
			}
			// Nothing changed: the guest keeps its 2 (unless its claim won),
			// the customer its 1.
			if sumLines(g.Lines, item) != 2 || g.MergedInto != "" || sumLines(c.Lines, item) != 1 {
				t.Errorf("%s: refused merge changed something: guest %+v, customer %+v", key, g, c)
			}
		}
		switch p.kind {
		case 0:
			if merged == (p.claim.status == 200) {
				t.Errorf("%s: merge and claim of the guest both %v: claim %s", key, merged, p.claim)
			}
			if p.claim.status == 200 {
				claimedUnits += 2
				if g.Status != "claimed" || c.Status != "held" || sumLines(c.Lines, item) != 1 {
					t.Errorf("%s: guest claimed, reads guest %+v customer %+v", key, g, c)
				}
			} else if p.claim.code() != "hold_released" {
				t.Errorf("%s: claim of a merged guest: %s", key, p.claim)
			}
		case 1:
			if p.claim.status != 200 {
				t.Errorf("%s: claim of the customer: %s", key, p.claim)
				continue
			}
			var ch bbHold
			p.claim.decode(t, &ch)
			got := sumLines(ch.Lines, item)
			claimedUnits += got
			if (merged && got != 3) || (!merged && got != 1) || c.Status != "claimed" {
				t.Errorf("%s: customer claimed %d units, merged %v; reads %+v", key, got, merged, c)
			}
			if !merged && g.Status != "held" {
				t.Errorf("%s: guest after a refused merge: %+v", key, g)
			}
		case 2:
			if !merged && g.Status != "expired" {
				t.Errorf("%s: guest after hold_expired: %+v", key, g)
			}
		}
	}
	t.Logf("%s: merge outcomes %v", b.engine, counts)
	// Units: only claims took stock; the held are the live holds' lines.
	if l := b.level(t, item, 1); l.Available != stock-claimedUnits {
		t.Errorf("item %d: %+v; the answers claimed %d of %d", item, l, claimedUnits, stock)
	}
	b.invariant(t)
}

// ---------------------------------------------------------------------
// Merges at once: two guests into one new checkout; one guest into two
// customers; the same merge sent three times at once.

func (b *blackBox) mergeFanIn(t *testing.T) {
	groups := b.size.clients / 3
	const item = 15501
	b.setStock(t, item, 1, groups*20)
	type group struct {
		g1, g2, c1, c2, dest string
		fan, split           [2]answer
		same                 [3]answer
		sg, sc               string // the same-merge guest and customer
	}
	gs := make([]group, groups)
	res := func(id string, q int) {
		b.must(t, 201, "POST", b.shopPath("/reservations"), b.key, map[string]any{"checkout_id": id, "lines": []bbLine{{ItemID: item, LocationID: 1, Quantity: q}}})
	}
	for i := range gs {
		g := &gs[i]
		g.g1, g.g2, g.c1, g.c2, g.dest, g.sg, g.sc = uuid.NewString(), uuid.NewString(), uuid.NewString(), uuid.NewString(), uuid.NewString(), uuid.NewString(), uuid.NewString()
		res(g.g1, 2)
		res(g.g2, 3)
		res(g.c1, 1)
		res(g.c2, 1)
		res(g.sg, 2)
		res(g.sc, 1)
	}
	merge := func(from, into string) answer {
		return b.do("POST", b.shopPath("/reservations/%s/merge", from), b.key, map[string]any{"into": into})
	}
	parallel(groups*7, func(j int) {
		g := &gs[j/7]
		switch k := j % 7; {
		case k < 2: // two guests into one new checkout
			g.fan[k] = merge([]string{g.g1, g.g2}[k], g.dest)
		case k < 4: // a second guest (the first of this group's fan) into two customers
			// g1 is in the fan race too: use a guest of its own
			g.split[k-2] = merge(g.sg, []string{g.c1, g.c2}[k-2])
		default: // the same merge three times (the split guest into c1 again)
			g.same[k-4] = merge(g.sg, g.c1)
		}
	})
	for _, g := range gs {
		// Fan-in: each guest's merge is done or changed nothing.
		want := 0
		for k, a := range g.fan {
			from := []string{g.g1, g.g2}[k]
			q := []int{2, 3}[k]
			if !outcomeKnown(t, "fan merge", a) {
				continue
			}
			_, h := b.hold(t, from)
			if a.status == 200 {
				want += q
				if h.Status != "released" || h.MergedInto != g.dest {
					t.Errorf("fan-in: merged %s reads %+v", from, h)
				}
			} else if h.Status != "held" || sumLines(h.Lines, item) != q {
				t.Errorf("fan-in: refused merge %s (%s) left %+v", from, a, h)
			}
		}
		r, d := b.hold(t, g.dest)
		if want > 0 && (d.Status != "held" || sumLines(d.Lines, item) != want) {
			t.Errorf("fan-in: destination reads %s, the merges that answered 200 moved %d (answers %s | %s)", r, want, g.fan[0], g.fan[1])
		}
		if want == 0 && r.status != 404 {
			t.Errorf("fan-in: no merge done, destination reads %s", r)
		}
		// The guest sg went to c1 or c2 (split), and was merged into c1 by
		// the same-merges: all of these are one guest; exactly one
		// destination got its 2 units.
		_, c1 := b.hold(t, g.c1)
		_, c2 := b.hold(t, g.c2)
		_, sg := b.hold(t, g.sg)
		got := sumLines(c1.Lines, item) + sumLines(c2.Lines, item) - 2
		if sg.Status != "released" || got != 2 || (sg.MergedInto != g.c1 && sg.MergedInto != g.c2) {
			t.Errorf("one guest into two customers: guest %+v, c1 %+v, c2 %+v (split %s | %s, same %s | %s | %s)", sg, c1, c2, g.split[0], g.split[1], g.same[0], g.same[1], g.same[2])
		}
		for _, a := range append(g.split[:], g.same[:]...) {
			if !outcomeKnown(t, "merge", a) {
				continue
			}
			if a.status == 200 {
				var dh bbHold
				a.decode(t, &dh)
				if dh.CheckoutID != sg.MergedInto {
					t.Errorf("a merge answered 200 into %s, the guest went to %s", dh.CheckoutID, sg.MergedInto)
				}
			} else if a.status != 409 || a.code() != "hold_released" {
				t.Errorf("merge of a guest merged elsewhere: %s", a)
			}
		}
	}
	// Every unit is still held, none claimed or given back.
	if l := b.level(t, item, 1); l.Held != groups*10 || l.Available != groups*20 {
		t.Errorf("item %d after the merges: %+v, want %d held", item, l, groups*10)
	}
	b.invariant(t)
}

// ---------------------------------------------------------------------
// Compare-and-set stock sets, adjustments and imports racing claims.

func (b *blackBox) casRacingClaims(t *testing.T) {
	n := b.size.clients
	const item, item2 = 16001, 16002
	const stock = 100000
	b.setStock(t, item, 1, stock)
	b.setStock(t, item2, 1, 50)
	var claimed, casUnits, item2Sets atomic.Int64
	var lastItem2 atomic.Int64
	lastItem2.Store(50)
	var failures atomic.Int64
	syncers := 3
	stop := make(chan struct{})
	var buyers sync.WaitGroup
	buyers.Add(n - syncers)
	go func() { buyers.Wait(); close(stop) }()
	parallel(n, func(i int) {
		if i >= syncers {
			defer buyers.Done()
			for r := 0; r < b.size.rounds*3; r++ {
				id := uuid.NewString()
				q := 1 + r%3
				a := b.reserve(id, []bbLine{{ItemID: item, LocationID: 1, Quantity: q}}, nil)
				if !outcomeKnown(t, "reserve", a) || a.status != 201 {
					t.Errorf("reserve: %s", a)
					continue
				}
				c := b.do("POST", b.shopPath("/reservations/%s/claim", id), b.key, nil)
				if !outcomeKnown(t, "claim", c) || c.status != 200 {
					t.Errorf("claim: %s", c)
					continue
				}
				claimed.Add(int64(q))
			}
			return
		}
		for k := 0; ; k++ {
			select {
			case <-stop:
				return
			default:
			}
			var l bbLevel
			lv := b.do("GET", b.shopPath("/inventory/%d/1", item), b.key, nil)
			if lv.status != 200 {
				t.Errorf("level: %s", lv)
				return
			}
			lv.decode(t, &l)
			var a answer
			switch k % 3 {
			case 0: // a set with expected_available
				a = b.do("PUT", b.shopPath("/inventory/%d/1", item), b.key, map[string]any{"available": l.Available + 5, "expected_available": l.Available, "reason": "erp sync", "adjustment_id": fmt.Sprintf("cas-%d-%d", i, k)})
			case 1: // an adjustment with expected_available
				a = b.do("POST", b.shopPath("/inventory/%d/1/adjust", item), b.key, map[string]any{"delta": 5, "expected_available": l.Available, "reason": "erp sync"})
			default: // an import of both keys, expecting both
				v2 := lastItem2.Load()
				a = b.do("PUT", b.shopPath("/inventory"), b.key, map[string]any{"import_id": fmt.Sprintf("imp-%d-%d", i, k), "reason": "sync", "entries": []map[string]any{
					{"item_id": item2, "location_id": 1, "available": v2 + 1, "expected_available": v2},
					{"item_id": item, "location_id": 1, "available": l.Available + 5, "expected_available": l.Available}}})
			}
			if !outcomeKnown(t, "CAS", a) {
				continue
			}
			switch {
			case a.status == 200:
				casUnits.Add(5)
				if k%3 == 2 {
					item2Sets.Add(1)
					lastItem2.Add(1)
				}
			case a.status == 409 && a.code() == "stock_changed":
				failures.Add(1)
				if k%3 == 2 {
					// The import refused as a whole; learn item2's value for the next.
					var l2 bbLevel
					b.must(t, 200, "GET", b.shopPath("/inventory/%d/1", item2), b.key, nil).decode(t, &l2)
					lastItem2.Store(int64(l2.Available))
				}
			default:
				t.Errorf("CAS change: %s", a)
			}
		}
	})
	l := b.level(t, item, 1)
	want := stock + int(casUnits.Load()) - int(claimed.Load())
	if l.Available != want || l.Held != 0 {
		t.Errorf("item %d: %+v; answers say %d (+%d by CAS, -%d claimed)", item, l, want, casUnits.Load(), claimed.Load())
	}
	// Syncers learn item2 from answers: its final value is 50 + the imports applied.
	if l2 := b.level(t, item2, 1); l2.Available != 50+int(item2Sets.Load()) {
		t.Errorf("item %d: %+v; %d imports applied", item2, l2, item2Sets.Load())
	}
	t.Logf("%s: CAS applied %d units, refused %d times, %d units claimed", b.engine, casUnits.Load(), failures.Load(), claimed.Load())
	b.invariant(t)
}

// ---------------------------------------------------------------------
// Availability reads during a flash sale: never more than could be
// reserved, never less than could, never negative, and in agreement with a
// reserve right after.

func (b *blackBox) availabilityFlashSale(t *testing.T) {
	n := b.size.clients
	const item = 17001
	stock := n * 3
	b.setStock(t, item, 1, stock)
	var started, succeeded atomic.Int64
	readers := 4
	var bad atomic.Int64
	var reads atomic.Int64
	ids := make([][]string, n)
	var buyers sync.WaitGroup
	buyers.Add(n - readers)
	stop := make(chan struct{})
	go func() { buyers.Wait(); close(stop) }()
	parallel(n, func(i int) {
		if i >= readers {
			defer buyers.Done()
			for {
				id := uuid.NewString()
				started.Add(1)
				a := b.reserve(id, []bbLine{{ItemID: item, LocationID: 1, Quantity: 1}}, nil)
				if !outcomeKnown(t, "reserve", a) {
					return
				}
				if a.status == 201 {
					succeeded.Add(1)
					ids[i] = append(ids[i], id)
					continue
				}
				if a.code() != "insufficient_stock" {
					t.Errorf("reserve in the sale: %s", a)
				}
				return
			}
		}
		prev := stock + 1
		for {
			select {
			case <-stop:
				return
			default:
			}
			done := succeeded.Load() // reservations answered before this read was sent
			a := b.do("GET", b.shopPath("/availability?items=%d&locations=1", item), b.key, nil)
			begun := started.Load() // reservations begun before this read was answered
			if !outcomeKnown(t, "availability", a) || a.status != 200 {
				t.Errorf("availability: %s", a)
				return
			}
			reads.Add(1)
			var av struct {
				Items []struct {
					Sellable int `json:"sellable"`
					Whole    int `json:"whole"`
				} `json:"items"`
			}
			a.decode(t, &av)
			s := av.Items[0].Sellable
			if s < 0 || s > stock-int(done) || s < stock-int(begun) || s > prev || av.Items[0].Whole != s {
				if bad.Add(1) <= 5 {
					t.Errorf("availability during the sale: sellable %d whole %d (previous read %d); %d reservations were answered held before the read, %d begun before its answer, of %d",
						s, av.Items[0].Whole, prev, done, begun, stock)
				}
			}
			prev = s
		}
	})
	if int(succeeded.Load()) != stock {
		t.Errorf("%d held in the sale, stock %d", succeeded.Load(), stock)
	}
	// Give 3 back: availability says 3, a reserve of 3 holds, one more is short.
	var back []string
	for _, l := range ids {
		back = append(back, l...)
	}
	for _, id := range back[:3] {
		b.must(t, 200, "POST", b.shopPath("/reservations/%s/release", id), b.key, nil)
	}
	var av struct {
		Items []struct {
			Sellable int `json:"sellable"`
		} `json:"items"`
	}
	b.must(t, 200, "GET", b.shopPath("/availability?items=%d&locations=1", item), b.key, nil).decode(t, &av)
	if av.Items[0].Sellable != 3 {
		t.Errorf("availability after 3 releases: %d", av.Items[0].Sellable)
	}
	b.must(t, 201, "POST", b.shopPath("/reservations"), b.key, map[string]any{"checkout_id": uuid.NewString(), "lines": []bbLine{{ItemID: item, LocationID: 1, Quantity: 3}}})
	if a := b.reserve(uuid.NewString(), []bbLine{{ItemID: item, LocationID: 1, Quantity: 1}}, nil); a.status != 409 {
		t.Errorf("reserve past availability 0: %s", a)
	}
	t.Logf("%s: %d availability reads during the sale", b.engine, reads.Load())
	b.invariant(t)
}

// ---------------------------------------------------------------------
// Pre-orders: every client reserves at once on a key with stock s and a
// cap c: exactly s+c units held, the pre-ordered ones at most c; claims owe
// them; a delivery converts them.

func (b *blackBox) preorderRace(t *testing.T) {
	n := b.size.clients
	const item = 18001
	stock, capacity := n/4, n/2
	b.setStock(t, item, 1, stock)
	b.must(t, 200, "PUT", b.shopPath("/inventory/%d/1/preorder", item), b.key, map[string]any{"cap": capacity, "expected_at": "2031-03-01T12:00:00Z"})
	ids := make([]string, n)
	answers := make([]answer, n)
	parallel(n, func(i int) {
		ids[i] = uuid.NewString()
		answers[i] = b.reserve(ids[i], []bbLine{{ItemID: item, LocationID: 1, Quantity: 1}}, nil)
	})
	held, pre := 0, 0
	var heldIDs []string
	for i, a := range answers {
		if !outcomeKnown(t, "reserve", a) {
			continue
		}
		if a.status != 201 {
			if a.code() != "insufficient_stock" {
				t.Errorf("pre-order reserve: %s", a)
			}
			continue
		}
		var h bbHold
		a.decode(t, &h)
		held++
		pre += h.Lines[0].Preordered
		heldIDs = append(heldIDs, ids[i])
	}
	if held != stock+capacity || pre != capacity {
		t.Errorf("%d held (%d pre-ordered), want %d (%d)", held, pre, stock+capacity, capacity)
	}
	type preorderState struct {
		Held     int `json:"held"`
		Owed     int `json:"owed"`
		Headroom int `json:"headroom"`
	}
	var p preorderState
	b.must(t, 200, "GET", b.shopPath("/inventory/%d/1/preorder", item), b.key, nil).decode(t, &p)
	if p.Held != pre || p.Owed != 0 || p.Headroom != capacity-pre {
		t.Errorf("pre-order after the race: %+v with %d pre-ordered held", p, pre)
	}
	parallel(len(heldIDs), func(i int) {
		if a := b.do("POST", b.shopPath("/reservations/%s/claim", heldIDs[i]), b.key, nil); a.status != 200 {
			t.Errorf("claim: %s", a)
		}
	})
	b.must(t, 200, "GET", b.shopPath("/inventory/%d/1/preorder", item), b.key, nil).decode(t, &p)
	if p.Held != 0 || p.Owed != pre {
		t.Errorf("pre-order after the claims: %+v, want owed %d", p, pre)
	}
	if l := b.level(t, item, 1); l.Available != 0 || l.Held != 0 {
		t.Errorf("level after the claims: %+v", l)
	}
	b.must(t, 200, "POST", b.shopPath("/inventory/%d/1/adjust", item), b.key, map[string]any{"delta": pre + 2, "reason": "delivery"})
	b.must(t, 200, "GET", b.shopPath("/inventory/%d/1/preorder", item), b.key, nil).decode(t, &p)
	if l := b.level(t, item, 1); l.Available != 2 || p.Owed != 0 || p.Headroom != capacity {
		t.Errorf("after a delivery of %d: level %+v, pre-order %+v", pre+2, l, p)
	}
	b.invariant(t)
}

// ---------------------------------------------------------------------
// Admin cancel of an item's holds, in pages, racing claims of the same
// holds: the answers list exactly what was cancelled, a claimed hold is
// never cancelled, every hold ends one way, and the audit has one entry
// per cancelled hold.

func (b *blackBox) cancelRacingClaims(t *testing.T) {
	const item = 19001
	H := b.size.holds
	b.setStock(t, item, 1, H)
	ids := make([]string, H)
	n := b.size.clients
	parallel(n, func(w int) {
		for i := w; i < H; i += n {
			ids[i] = uuid.NewString()
			if a := b.reserve(ids[i], []bbLine{{ItemID: item, LocationID: 1, Quantity: 1}}, map[string]any{"buyer_id": fmt.Sprintf("buyer-%d", i%50)}); a.status != 201 {
				t.Errorf("reserve: %s", a)
			}
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	claims := make([]answer, H)
	var pages []holdfast.CancelResult
	var cancelErr []answer
	parallel(n, func(w int) {
		if w == 0 {
			cursor := ""
			for k := 0; k < 1000; k++ {
				body := map[string]any{"item_id": item, "location_id": 1, "reason": "recall", "limit": 100}
				if cursor != "" {
					body["cursor"] = cursor
				}
				a := b.do("POST", b.shopPath("/holds/cancel"), b.admin, body)
				if a.err != nil || a.status != 200 {
					cancelErr = append(cancelErr, a)
					return
				}
				var r holdfast.CancelResult
				if err := json.Unmarshal(a.body, &r); err != nil {
					cancelErr = append(cancelErr, a)
					return
				}
				pages = append(pages, r)
				if !r.More {
					return
				}
				cursor = r.Next
			}
			return
		}
		// Claimers: every third hold, from both ends.
		for i := w - 1; i < H; i += n - 1 {
			if i%3 == 0 {
				claims[i] = b.do("POST", b.shopPath("/reservations/%s/claim", ids[i]), b.key, nil)
			}
		}
	})
	for _, a := range cancelErr {
		t.Errorf("cancel: %s", a)
	}
	cancelled := map[string]int{}
	units := 0
	for _, p := range pages {
		for _, c := range p.Cancelled {
			cancelled[c.CheckoutID.String()]++
		}
		for _, u := range p.Units {
			if u.ItemID == item {
				units += u.Units
			}
		}
	}
	if units != len(cancelled) {
		t.Errorf("cancel answers: %d units back for %d holds", units, len(cancelled))
	}
	claimedN := 0
	for i, id := range ids {
		if cancelled[id] > 1 {
			t.Errorf("hold %s cancelled %d times", id, cancelled[id])
		}
		_, h := b.hold(t, id)
		claimedOK := claims[i].status == 200
		if claims[i].status != 0 && !outcomeKnown(t, "claim", claims[i]) {
			continue
		}
		if claimedOK {
			claimedN++
		}
		switch {
		case claimedOK && cancelled[id] > 0:
			t.Errorf("hold %s both claimed (%s) and listed as cancelled", id, claims[i])
		case claimedOK && h.Status != "claimed":
			t.Errorf("hold %s claimed, reads %s", id, h.Status)
		case cancelled[id] > 0 && h.Status != "released":
			t.Errorf("hold %s cancelled, reads %s", id, h.Status)
		case !claimedOK && cancelled[id] == 0:
			t.Errorf("hold %s neither claimed nor cancelled: claim %v, reads %s", id, claims[i], h.Status)
		case claims[i].status != 0 && !claimedOK && claims[i].code() != "hold_released":
			t.Errorf("claim of %s: %s", id, claims[i])
		}
	}
	if l := b.level(t, item, 1); l.Available != H-claimedN || l.Held != 0 {
		t.Errorf("item %d: %+v; %d claimed of %d", item, l, claimedN, H)
	}
	// The audit has one hold.cancel entry per cancelled hold of this item.
	entries, cursor := 0, ""
	for k := 0; k < 1000; k++ {
		q := "/audit?action=hold.cancel&limit=500"
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		var page struct {
			Entries []struct {
				Detail struct {
					CheckoutID string `json:"checkout_id"`
					ItemID     int64  `json:"item_id"`
				} `json:"detail"`
			} `json:"entries"`
			Next string `json:"next"`
		}
		b.must(t, 200, "GET", b.shopPath("%s", q), b.admin, nil).decode(t, &page)
		for _, e := range page.Entries {
			if e.Detail.ItemID == item {
				entries++
				if cancelled[e.Detail.CheckoutID] == 0 {
					t.Errorf("audit names %s, not in any cancel answer", e.Detail.CheckoutID)
				}
			}
		}
		if page.Next == "" {
			break
		}
		cursor = page.Next
	}
	if entries != len(cancelled) {
		t.Errorf("audit: %d hold.cancel entries for %d cancelled holds", entries, len(cancelled))
	}
	t.Logf("%s: %d holds, %d claimed, %d cancelled in %d calls", b.engine, H, claimedN, len(cancelled), len(pages))
	b.invariant(t)
}

// ---------------------------------------------------------------------
// Admin cancel by item and buyer over more held holds of the item than
// one call examines (5000): the calls follow the cursor, end exactly the
// buyer's holds, each once, and nothing else. Long form only (it makes
// 5200 holds).

func (b *blackBox) cancelScanWindow(t *testing.T) {
	const item = 19501
	const H, buyers = 5200, 50
	b.setStock(t, item, 1, H)
	ids := make([]string, H)
	n := b.size.clients
	parallel(n, func(w int) {
		for i := w; i < H; i += n {
			ids[i] = uuid.NewString()
			if a := b.reserve(ids[i], []bbLine{{ItemID: item, LocationID: 1, Quantity: 1}}, map[string]any{"buyer_id": fmt.Sprintf("scan-%d", i%buyers)}); a.status != 201 {
				t.Errorf("reserve: %s", a)
			}
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	cancelled := map[string]int{}
	calls, sawMore := 0, false
	for cursor := ""; calls < 100; {
		body := map[string]any{"item_id": item, "buyer_id": "scan-7", "reason": "fraud", "limit": 500}
		if cursor != "" {
			body["cursor"] = cursor
		}
		var r holdfast.CancelResult
		b.must(t, 200, "POST", b.shopPath("/holds/cancel"), b.admin, body).decode(t, &r)
		calls++
		for _, c := range r.Cancelled {
			cancelled[c.CheckoutID.String()]++
		}
		if !r.More {
			break
		}
		sawMore = true
		if r.Next == "" {
			t.Fatalf("more without next after %d calls", calls)
		}
		cursor = r.Next
	}
	if !sawMore {
		t.Errorf("%d held holds of the item, one call answered more=false", H)
	}
	for i, id := range ids {
		_, h := b.hold(t, id)
		mine := i%buyers == 7
		switch {
		case cancelled[id] > 1:
			t.Errorf("hold %s cancelled %d times", id, cancelled[id])
		case mine && (cancelled[id] != 1 || h.Status != "released"):
			t.Errorf("hold %d of buyer scan-7: cancelled %d times, reads %s", i, cancelled[id], h.Status)
		case !mine && (cancelled[id] != 0 || h.Status != "held"):
			t.Errorf("hold %d of another buyer: cancelled %d times, reads %s", i, cancelled[id], h.Status)
		}
	}
	want := (H + buyers - 1 - 7) / buyers
	if len(cancelled) != want {
		t.Errorf("%d cancelled, buyer scan-7 had %d", len(cancelled), want)
	}
	if l := b.level(t, item, 1); l.Held != H-want || l.Available != H {
		t.Errorf("item %d: %+v after cancelling %d", item, l, want)
	}
	t.Logf("%s: %d holds of buyer scan-7 cancelled in %d calls among %d", b.engine, len(cancelled), calls, H)
	b.invariant(t)
}

// ---------------------------------------------------------------------
// Tight deadlines (X-Request-Timeout of a few milliseconds) on merges,
// bundle reservations, compare-and-set adjustments and admin cancels, at
// full concurrency: a 2xx was done, a 4xx changed nothing, and a 5xx is
// outcome-unknown: a retry without the deadline settles it, and the final
// state is what the settled answers say.

func (b *blackBox) tightDeadlines(t *testing.T) {
	n := b.size.clients
	const a1, a2, bundle, cas, guestItem = 21001, 21002, 21100, 21200, 21300
	b.setStock(t, a1, 1, 10000)
	b.setStock(t, a2, 1, 10000)
	b.setStock(t, cas, 1, 1000)
	b.setStock(t, guestItem, 1, 10000)
	b.must(t, 200, "PUT", b.shopPath("/bundles/%d", bundle), b.key, map[string]any{"components": []map[string]any{{"item_id": a1, "quantity": 1}, {"item_id": a2, "quantity": 3}}})
	deadlines := []string{"5ms", "40ms", "120ms", "300ms", "700ms"}
	type op struct {
		kind                   int // 0 merge, 1 bundle reserve, 2 adjust, 3 cancel by buyer
		guest, customer, buyer string
		id                     string
		first, settled         answer
	}
	ops := make([]op, n*4)
	for i := range ops {
		o := &ops[i]
		o.kind = i % 4
		o.id = uuid.NewString()
		switch o.kind {
		case 0:
			o.guest, o.customer = uuid.NewString(), uuid.NewString()
			b.must(t, 201, "POST", b.shopPath("/reservations"), b.key, map[string]any{"checkout_id": o.guest, "lines": []bbLine{{ItemID: guestItem, LocationID: 1, Quantity: 2}}})
			b.must(t, 201, "POST", b.shopPath("/reservations"), b.key, map[string]any{"checkout_id": o.customer, "lines": []bbLine{{ItemID: guestItem, LocationID: 1, Quantity: 1}}})
		case 3:
			o.buyer = "tight-" + strconv.Itoa(i)
			for k := 0; k < 3; k++ {
				b.must(t, 201, "POST", b.shopPath("/reservations"), b.key, map[string]any{"checkout_id": uuid.NewString(), "buyer_id": o.buyer, "lines": []bbLine{{ItemID: guestItem, LocationID: 1, Quantity: 1}}})
			}
		}
	}
	send := func(o *op, timeout string) answer {
		switch o.kind {
		case 0:
			return b.doBy(timeout, "POST", b.shopPath("/reservations/%s/merge", o.guest), b.key, map[string]any{"into": o.customer})
		case 1:
			return b.doBy(timeout, "POST", b.shopPath("/reservations"), b.key, map[string]any{"checkout_id": o.id, "lines": []bbLine{{ItemID: bundle, LocationID: 1, Quantity: 1}}})
		case 2:
			return b.doBy(timeout, "POST", b.shopPath("/inventory/%d/1/adjust", cas), b.key, map[string]any{"delta": 1, "reason": "tight", "adjustment_id": o.id})
		default:
			return b.doBy(timeout, "POST", b.shopPath("/holds/cancel"), b.admin, map[string]any{"buyer_id": o.buyer, "reason": "tight", "limit": 500})
		}
	}
	parallel(len(ops), func(i int) { ops[i].first = send(&ops[i], deadlines[i%len(deadlines)]) })
	unknown, refused := 0, 0
	answers := map[string]int{}
	for i := range ops {
		o := &ops[i]
		answers[fmt.Sprintf("%d %s", o.first.status, o.first.code())]++
		switch {
		case o.first.err != nil || o.first.status >= 500:
			unknown++
			if o.first.err == nil && o.first.status != 503 && o.first.code() != "outcome_unknown" {
				t.Errorf("kind %d: a 5xx that is neither 503 nor outcome_unknown: %s", o.kind, o.first)
			}
		case o.first.status >= 400:
			refused++
		}
		// Settle: the same request without a tight deadline.
		o.settled = send(o, "10s")
	}
	claimedCancel := map[string]bool{}
	adjusted := 0
	for _, o := range ops {
		f, s := o.first, o.settled
		definite := f.err == nil && f.status < 500
		switch o.kind {
		case 0:
			_, g := b.hold(t, o.guest)
			_, c := b.hold(t, o.customer)
			if s.status != 200 || g.MergedInto != o.customer || sumLines(c.Lines, guestItem) != 3 {
				t.Errorf("merge: first %s, settled %s; guest %+v customer %+v", f, s, g, c)
			}
			if definite && f.status >= 400 {
				t.Errorf("merge under a tight deadline refused with %s, yet a retry merged it", f)
			}
		case 1:
			r, h := b.hold(t, o.id)
			if definite && f.status >= 400 {
				// Refused: the retry makes it afresh (201).
				if s.status != 201 {
					t.Errorf("bundle reserve refused (%s), the retry answered %s", f, s)
				}
			} else if definite && f.status == 201 && s.status != 200 {
				t.Errorf("bundle reserve held (%s), the retry answered %s, not a replay", f, s)
			}
			if r.status != 200 || h.Status != "held" || sumLines(h.Lines, a2) != 3 {
				t.Errorf("bundle hold %s after settling: %s", o.id, r)
			}
		case 2:
			if s.status != 200 {
				t.Errorf("adjust: first %s, settled %s", f, s)
				continue
			}
			adjusted++
			if definite && f.status >= 400 && !strings.Contains(string(s.body), `"available"`) {
				t.Errorf("adjust refused (%s), retry %s", f, s)
			}
		case 3:
			var rs []holdfast.CancelResult
			for _, a := range []answer{f, s} {
				if a.err == nil && a.status == 200 {
					var r holdfast.CancelResult
					a.decode(t, &r)
					rs = append(rs, r)
				}
			}
			for _, r := range rs {
				for _, c := range r.Cancelled {
					if claimedCancel[c.CheckoutID.String()] {
						t.Errorf("hold %s listed as cancelled by two answers (first %s, settled %s)", c.CheckoutID, f, s)
					}
					claimedCancel[c.CheckoutID.String()] = true
				}
			}
			listed := 0
			for _, r := range rs {
				listed += len(r.Cancelled)
			}
			if definite && listed != 3 {
				t.Errorf("cancel of buyer %s: first %s and settled %s list %d holds of its 3", o.buyer, f, s, listed)
			}
		}
	}
	// Each adjustment applied exactly once, whatever its first answer.
	if l := b.level(t, cas, 1); l.Available != 1000+adjusted {
		t.Errorf("item %d: %+v after %d settled adjustments", cas, l, adjusted)
	}
	t.Logf("%s: %d operations under deadlines of 5-700ms: %d outcome-unknown, %d refused with 4xx; first answers %v", b.engine, len(ops), unknown, refused, answers)
	b.invariant(t)
}

// ---------------------------------------------------------------------
// A drop: many buyers, each retrying its checkout at once, and one buyer
// under many checkouts at once; one entry per buyer; the draw is
// verifiable and the stock goes to the first ranks.

func (b *blackBox) dropEntries(t *testing.T) {
	n := b.size.clients
	const item = 20001
	const stock = 3
	b.setStock(t, item, 1, stock)
	window := 6
	b.must(t, 200, "PUT", b.shopPath("/inventory/%d/1/drop", item), b.key, map[string]any{"window_seconds": window})
	buyers := n / 2
	ids := make([]string, buyers)
	for i := range ids {
		ids[i] = uuid.NewString()
	}
	greedy := make([]string, n/2)
	for i := range greedy {
		greedy[i] = uuid.NewString()
	}
	const retries = 3
	retryAnswers := make([]answer, buyers*retries)
	greedyAnswers := make([]answer, len(greedy))
	line := []bbLine{{ItemID: item, LocationID: 1, Quantity: 1}}
	parallel(buyers*retries+len(greedy), func(j int) {
		if j < buyers*retries {
			retryAnswers[j] = b.reserve(ids[j/retries], line, map[string]any{"buyer_id": fmt.Sprintf("fan-%d", j/retries)})
			return
		}
		g := j - buyers*retries
		greedyAnswers[g] = b.reserve(greedy[g], line, map[string]any{"buyer_id": "greedy"})
	})
	for j, a := range retryAnswers {
		if !outcomeKnown(t, "drop entry", a) || a.status != 202 || !strings.Contains(string(a.body), `"status":"waiting"`) {
			t.Errorf("entry %d of buyer %d: %s", j%retries, j/retries, a)
		}
	}
	greedyIn := ""
	for g, a := range greedyAnswers {
		if !outcomeKnown(t, "greedy entry", a) {
			continue
		}
		switch {
		case a.status == 202:
			if greedyIn != "" {
				t.Errorf("buyer greedy entered twice: %s and %s", greedyIn, greedy[g])
			}
			greedyIn = greedy[g]
		case a.status == 409 && a.code() == "drop_entered":
			if r, _ := b.hold(t, greedy[g]); r.status != 404 {
				t.Errorf("a refused entry reads %s", r)
			}
		default:
			t.Errorf("greedy entry: %s", a)
		}
	}
	if greedyIn == "" {
		t.Errorf("buyer greedy never entered")
	}
	// Poll for the draw (the window is a few seconds).
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(window)*time.Second+time.Minute)
	defer cancel()
	c := client.New(b.url, b.key, client.WithHTTPClient(b.hc))
	var d *holdfast.Drop
	for {
		var err error
		d, err = c.Drop(ctx, holdfast.Key{ShopID: b.shop, ItemID: item, LocationID: 1})
		if err != nil {
			t.Fatalf("drop: %v", err)
		}
		if d.State == holdfast.DropDrawn {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("drop not drawn after its window: %+v", d)
		}
		time.Sleep(100 * time.Millisecond) // polling the condition
	}
	if err := holdfast.VerifyDrop(d); err != nil {
		t.Errorf("VerifyDrop: %v", err)
	}
	want := buyers
	if greedyIn != "" {
		want++
	}
	seen := map[string]bool{}
	for _, e := range d.Entrants {
		seen[e.CheckoutID.String()] = true
	}
	if d.Entries != want || len(d.Entrants) != want || len(seen) != want {
		t.Errorf("drop: %d entries, %d entrants (%d distinct), want %d", d.Entries, len(d.Entrants), len(seen), want)
	}
	// The first ranks get the stock, once the waitlist served them.
	sort.Slice(d.Entrants, func(i, j int) bool { return d.Entrants[i].Rank < d.Entrants[j].Rank })
	for deadline := time.Now().Add(time.Minute); ; {
		heldN := 0
		var states []string
		for r, e := range d.Entrants {
			_, h := b.hold(t, e.CheckoutID.String())
			states = append(states, h.Status)
			if h.Status == "held" {
				heldN++
				if r >= stock {
					t.Fatalf("rank %d holds while %d units went to ranks 1..%d: %v", r+1, stock, stock, states)
				}
			}
		}
		if heldN == stock {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the draw %d of %d units held: %v", heldN, stock, states)
		}
		time.Sleep(100 * time.Millisecond) // polling the condition
	}
	if l := b.level(t, item, 1); l.Held != stock || l.Sellable != 0 {
		t.Errorf("level after the draw: %+v", l)
	}
	b.invariant(t)
}
