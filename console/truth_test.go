package console_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/holdfast/holdfast/postgres/pgstore"
	"github.com/holdfast/holdfast/webhook"
)

// browser is headless Chromium driven for one test: every step and poll
// is bounded by the test's context.
type browser struct {
	t   *testing.T
	ctx context.Context
}

func newBrowser(t *testing.T, path string, timeout time.Duration) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU,
		chromedp.WindowSize(1280, 1000), chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(cancelBrowser)
	// The first run starts the browser and must not carry a timeout.
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	ctx, cancel := context.WithTimeout(bctx, timeout)
	t.Cleanup(cancel)
	return &browser{t: t, ctx: ctx}
}

func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// poll waits until the JavaScript expression is truthy, at most d. On
// failure it reports what the page shows (explain, a JavaScript
// expression) and returns false; the test goes on.
func (b *browser) poll(what, expr string, d time.Duration, explain string) bool {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(d))); err != nil {
		got, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](explain))
		b.t.Errorf("%s: %v; the page shows: %s", what, err, got)
		return false
	}
	return true
}

// shot writes a full-page screenshot to HOLDFAST_CONSOLE_SHOTS (if set)
// as name.png.
func (b *browser) shot(name string) {
	b.t.Helper()
	dir := os.Getenv("HOLDFAST_CONSOLE_SHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// badKeyReserve sends a reservation with a key that does not exist: the
// server holds its 401 for RefusalDelay (1 s).
func (s *server) badKeyReserve() int {
	s.t.Helper()
	req, err := http.NewRequest("POST", s.url+"/v1/shops/1/reservations",
		strings.NewReader(fmt.Sprintf(`{"checkout_id":%q,"lines":[{"item_id":1,"location_id":1,"quantity":1}]}`, uuid.New())))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer hf_no_such_key")
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// stampRE is the console's one time format, as JavaScript.
const stampRE = `/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC$/`

// TestConsoleChartsTellTheTruth drives the console in headless Chromium
// through what issue 26 found misleading: a shop page's charts are the
// shop's own (an idle shop shows none; the overview's are labelled
// server-wide); refusals (a bad key's 401, held a second) stay out of the
// p99; the charts have axes with a scale and leave idle time as a gap;
// every time on the page has one format, with its zone; and the webhook
// panel shows each endpoint's lag. Every check polls the page with a
// deadline.
func TestConsoleChartsTellTheTruth(t *testing.T) {
	path := chromium(t)
	s := newServer(t)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer up.Close()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "maintenance", http.StatusServiceUnavailable)
	}))
	defer down.Close()
	reg := webhook.NewRegistry(pgstore.Webhooks(s.db.Pool)).With(loopbackHooks)
	var hooks []int64
	for _, u := range []string{up.URL + "/holdfast", down.URL + "/hooks"} {
		ep, err := reg.Add(context.Background(), 1, u, nil)
		if err != nil {
			t.Fatal(err)
		}
		hooks = append(hooks, ep.ID)
	}
	s.stock(1, 1000)
	b := newBrowser(t, path, 4*time.Minute)
	b.do("log in", chromedp.Navigate(s.url+"/console/login"), chromedp.WaitVisible(chromedp.CSS("#login-form")),
		chromedp.SendKeys(chromedp.CSS("#key"), s.admin), chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS("#open-form")))
	// Reservations made now are in the charts' window (30 s here) for
	// every check below that needs them; each check that needs its own
	// makes them just before.
	for range 5 {
		s.reserve(uuid.New(), 1, 1)
	}
	const wait = 25 * time.Second // within the charts' window (120 × 250ms)
	caption := func(id string) string {
		return fmt.Sprintf(`(document.querySelector('#chart-%s figcaption') || {}).textContent`, id)
	}
	holds, p99 := "#chart-holds-per-second", "#chart-reserve-p99"

	// The overview's charts are the server's, and say so.
	b.poll("the overview's charts are labelled server-wide",
		fmt.Sprintf(`document.querySelector('%s').dataset.points !== '0' && /server-wide/i.test(%s) && /all shops/i.test(%s)`, holds, caption("holds-per-second"), caption("holds-per-second")),
		wait, caption("holds-per-second"))

	// A shop with no traffic has no points; shop 1 has its own.
	b.do("open shop 2", chromedp.Navigate(s.url+"/console/shops/2"), chromedp.WaitVisible(chromedp.CSS("#keys")))
	b.shot("shop-2")
	b.poll("an idle shop's holds chart is empty and names the shop",
		fmt.Sprintf(`document.querySelector('%s').dataset.points === '0' && /shop 2/.test(%s)`, holds, caption("holds-per-second")),
		wait, fmt.Sprintf(`document.querySelector('%s').dataset.points + ' points: ' + %s`, holds, caption("holds-per-second")))

	// Refusals stay out of the p99: three bad keys, each answered after a
	// second, then good reservations.
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if st := s.badKeyReserve(); st != http.StatusUnauthorized {
				t.Errorf("a bad key's reservation: %d, want 401", st)
			}
		}()
	}
	wg.Wait()
	for range 3 {
		s.reserve(uuid.New(), 1, 1)
	}
	// The page's script replaces #charts when it refreshes them: marking
	// it waits for a render made after the refusals were counted.
	b.do("open the overview", chromedp.Navigate(s.url+"/console/"), chromedp.WaitVisible(chromedp.CSS("#charts")),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('charts').dataset.stale = '1'`))
	b.poll("the server-wide p99 leaves out the refusals",
		fmt.Sprintf(`(function () { var c = document.getElementById('charts'); if (c.dataset.stale) return false;
			var m = /max ([0-9.,]+) ms/.exec(%s); return document.querySelector('%s').dataset.points !== '0' && m && parseFloat(m[1].replace(',', '')) < 800; })()`, caption("reserve-p99"), p99),
		wait, caption("reserve-p99"))

	// Shop 1's page: its own charts, with axes, and a gap between two
	// reservations made a second apart (the second a bad key's refusal
	// is held: shop 1 has no answers meanwhile).
	s.reserve(uuid.New(), 1, 1)
	if st := s.badKeyReserve(); st != http.StatusUnauthorized {
		t.Errorf("a bad key's reservation: %d, want 401", st)
	}
	s.reserve(uuid.New(), 1, 1)
	b.do("open shop 1", chromedp.Navigate(s.url+"/console/shops/1"), chromedp.WaitVisible(chromedp.CSS(`#keys tr[data-key="1/1"]`)))
	b.poll("shop 1's charts are its own",
		fmt.Sprintf(`document.querySelector('%s').dataset.points !== '0' && /shop 1/.test(%s) && !/server-wide/i.test(%s)`, holds, caption("holds-per-second"), caption("holds-per-second")),
		wait, caption("holds-per-second"))
	ticks := func(id string) string {
		return fmt.Sprintf(`Array.from(document.querySelectorAll('#chart-%s svg text')).map(function (e) { return e.textContent; })`, id)
	}
	b.poll("the charts have axes with a scale",
		fmt.Sprintf(`(function () { var h = %s, p = %s;
			return h.length >= 4 && h.some(function (s) { return /now/.test(s); }) && h.some(function (s) { return /\/s$/.test(s); }) &&
				p.some(function (s) { return /ms$/.test(s); }) && h.some(function (s) { return /^−/.test(s); }); })()`, ticks("holds-per-second"), ticks("reserve-p99")),
		wait, fmt.Sprintf(`JSON.stringify([%s, %s])`, ticks("holds-per-second"), ticks("reserve-p99")))
	runs := fmt.Sprintf(`document.querySelectorAll('%s svg polyline, %s svg circle.point').length`, holds, holds)
	b.poll("idle time is a gap between two runs of points", runs+` >= 2`, wait, `String(`+runs+`) + ' runs'`)

	// One time format, with its zone, everywhere on the shop page (the
	// live tables, the events, the webhooks, the live status, the charts).
	times := `(function () { var t = document.body.innerText;
		var all = t.match(/(?<![\d.:])(\d{4}-\d\d-\d\d[ T])?\d{1,2}:\d\d(?!\d)(:\d\d)?(\.\d+)?( ?[AP]M| ?UTC| ?Z)?/g) || [];
		return all.filter(function (s) { return !` + stampRE + `.test(s); }); })()`
	b.poll("one time format with its zone",
		`Number(document.getElementById('live').dataset.updates || '0') > 0 && document.querySelectorAll('#holds tbody tr[data-checkout]').length > 0 &&
			document.querySelectorAll('#events tbody tr[data-cursor]').length > 0 && `+times+`.length === 0`,
		wait, `JSON.stringify(`+times+`)`)

	// Webhook lag: the endpoint that answers 503 is behind by events of a
	// known age; the other is up to date.
	lag := func(id int64) string {
		return fmt.Sprintf(`(document.querySelector('#webhooks tr[data-endpoint="%d"] td.lag') || {}).textContent`, id)
	}
	b.poll("each endpoint's lag",
		fmt.Sprintf(`%s === '-' && /^[1-9][0-9]* events?, [0-9.]+ s$/.test(%s)`, lag(hooks[0]), lag(hooks[1])),
		wait, fmt.Sprintf(`JSON.stringify([%s, %s, document.querySelector('#webhooks').innerText])`, lag(hooks[0]), lag(hooks[1])))
	b.shot("shop-1")
}
