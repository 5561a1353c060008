package console_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/console"
)

// TestConsolePreordersAndDrops drives the console in headless Chromium
// over a key with a pre-order cap and three keys with drops (scheduled,
// open, drawn), all made through the engine, and checks every value the
// pages show against what the engine says: the cap, pre-ordered units
// held, units owed, headroom and expected date; each drop's state, window,
// entrants and commitment, and after the draw its seed, VerifyDrop's
// verdict, the lottery order and each entrant's outcome; the shop page's
// drops and pre-orders page. Every check polls the page.
func TestConsolePreordersAndDrops(t *testing.T) {
	path := chromium(t)
	s := newServer(t)
	ctx := context.Background()
	key := func(item int64) holdfast.Key { return holdfast.Key{ShopID: 1, ItemID: item, LocationID: 1} }

	// Pre-orders on item 1: 2 in stock, cap 3 then 5 (the shop page
	// shows the newest). Checkout a takes 3 (1 pre-ordered) and is
	// claimed: 1 owed. Checkout b pre-orders 2: held.
	s.stock(1, 2)
	expected := time.Date(2027, 3, 1, 12, 0, 0, 0, time.UTC)
	if _, err := s.hc.SetPreorder(ctx, holdfast.Preorder{Key: key(1), Cap: 3, ExpectedAt: expected.AddDate(0, 1, 0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.hc.SetPreorder(ctx, holdfast.Preorder{Key: key(1), Cap: 5, ExpectedAt: expected}); err != nil {
		t.Fatal(err)
	}
	a, b := uuid.New(), uuid.New()
	s.reserve(a, 1, 3)
	if st := s.api("POST", "/v1/shops/1/reservations/"+a.String()+"/claim", ""); st != http.StatusOK {
		t.Fatalf("claim: %d", st)
	}
	s.reserve(b, 1, 2)
	if p, err := s.hc.Preorder(ctx, key(1)); err != nil || p.Cap != 5 || p.Held != 2 || p.Owed != 1 || p.Headroom != 2 {
		t.Fatalf("pre-order of item 1: %+v %v, want cap 5, held 2, owed 1, headroom 2", p, err)
	}

	// Drops: item 2's opens in an hour; item 3's is open with one entrant;
	// item 4's window is 5 s with three entrants, then drawn.
	enter := func(item int64, buyer string) uuid.UUID {
		t.Helper()
		id := uuid.New()
		_, err := s.hc.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, BuyerID: buyer,
			Lines: []holdfast.Line{{ItemID: item, LocationID: 1, Quantity: 1}}})
		if !errors.Is(err, holdfast.ErrWaitlisted) {
			t.Fatalf("entrant %s of item %d: %v, want ErrWaitlisted (an entry; a slow machine may have let the window pass)", buyer, item, err)
		}
		return id
	}
	for item := int64(2); item <= 4; item++ {
		s.stock(item, 1)
	}
	scheduled, err := s.hc.SetDrop(ctx, holdfast.DropParams{Key: key(2), StartsAt: time.Now().Add(time.Hour), Window: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	open, err := s.hc.SetDrop(ctx, holdfast.DropParams{Key: key(3), Window: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	enter(3, "open-0")
	drawn, err := s.hc.SetDrop(ctx, holdfast.DropParams{Key: key(4), Window: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		enter(4, fmt.Sprintf("buyer-%d", i))
	}
	// The window ends by the clock: serve the waitlist (the draw, then
	// rank 1's hold from the one unit) until the engine says so.
	deadline := time.Now().Add(time.Until(drawn.EndsAt()) + time.Minute)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := s.hc.ServeWaitlist(ctx); err != nil {
			t.Fatal(err)
		}
		if drawn, err = s.hc.Drop(ctx, key(4)); err != nil {
			t.Fatal(err)
		}
		if drawn.State == holdfast.DropDrawn {
			if h, err := s.hc.Hold(ctx, 1, drawn.Entrants[0].CheckoutID); err == nil && h.Status == holdfast.StatusHeld {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("item 4's drop was not drawn and served by %v: %+v", deadline, drawn)
		}
		<-tick.C
	}
	if len(drawn.Entrants) != 3 || holdfast.VerifyDrop(drawn) != nil {
		t.Fatalf("drawn drop: %+v", drawn)
	}

	br := newBrowser(t, path, 4*time.Minute)
	br.do("log in", chromedp.Navigate(s.url+"/console/login"), chromedp.WaitVisible(chromedp.CSS("#login-form")),
		chromedp.SendKeys(chromedp.CSS("#key"), s.admin), chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS("#open-form")))
	const wait = 30 * time.Second
	keyPage := func(item int64) {
		t.Helper()
		br.do(fmt.Sprintf("open item %d's page", item), chromedp.Navigate(fmt.Sprintf("%s/console/shops/1/keys/%d/1", s.url, item)),
			chromedp.WaitVisible(chromedp.CSS("#level")))
	}
	text := func(sel string) string {
		return fmt.Sprintf(`(document.querySelector(%q) || {}).textContent`, sel)
	}

	keyPage(1)
	cell := func(c string) string { return text("#preorder td." + c) }
	br.poll("item 1's pre-orders",
		fmt.Sprintf(`%s === '5' && %s === '2' && %s === '1' && %s === '2' && %s === %q`,
			cell("cap"), cell("held"), cell("owed"), cell("headroom"), cell("expected"), expected.Format(console.TimeLayout)),
		wait, `document.querySelector('#preorder').innerText`)
	// b, all of whose units are pre-ordered, is listed too (they sit on
	// the key's companion; Engine.Holds by key matches both).
	br.poll("item 1's holds show their pre-ordered units",
		fmt.Sprintf(`%s === '3 × item 1 @ 1 (1 pre-ordered)' && %s === '2 × item 1 @ 1 (2 pre-ordered)'`,
			text(fmt.Sprintf(`#key-holds tr[data-checkout="%s"] td:nth-child(3)`, a)),
			text(fmt.Sprintf(`#key-holds tr[data-checkout="%s"] td:nth-child(3)`, b))),
		wait, `document.querySelector('#key-holds').innerText`)
	br.poll("item 1 has no drop", `!!document.querySelector('#drop-none')`, wait, `document.body.innerText`)
	for _, h := range []struct {
		id   uuid.UUID
		says string
	}{{a, "1, expected "}, {b, "2, expected "}} {
		br.do("open checkout "+h.id.String(), chromedp.Navigate(fmt.Sprintf("%s/console/shops/1/holds/%s", s.url, h.id)), chromedp.WaitVisible(chromedp.CSS("#hold")))
		br.poll("checkout "+h.id.String()+"'s pre-ordered units", fmt.Sprintf(`%s === %q`, text("#hold-lines td.preordered"), h.says+expected.Format(console.TimeLayout)),
			wait, `document.querySelector('#hold-lines').innerText`)
	}

	keyPage(2)
	dropIs := func(what string, d *holdfast.Drop, phase string, entries int) {
		t.Helper()
		br.poll(what, fmt.Sprintf(`(document.querySelector('#drop') || {dataset: {}}).dataset.phase === %q && %s === '%d' && %s === %q && %s === %q && !document.querySelector('#drop-seed')`,
			phase, text("#drop-entries"), entries, text("#drop-commitment"), d.Commitment,
			text("#drop-window"), fmt.Sprintf("%s to %s (%s)", d.StartsAt.UTC().Format(console.TimeLayout), d.EndsAt().UTC().Format(console.TimeLayout), d.Window)),
			wait, `document.querySelector('#drop') ? document.querySelector('#drop').innerText : document.body.innerText`)
	}
	dropIs("item 2's scheduled drop", scheduled, "scheduled", 0)
	br.poll("item 2 has no pre-orders", `document.querySelector('#preorder').dataset.cap === '0'`, wait, `document.body.innerText`)
	keyPage(3)
	dropIs("item 3's open drop", open, "open", 1)

	keyPage(4)
	order := `JSON.stringify(Array.from(document.querySelectorAll('#drop-order tbody tr')).map(function (tr) { return [tr.dataset.rank, tr.dataset.checkout, tr.cells[2].textContent, tr.cells[3].textContent]; }))`
	want := fmt.Sprintf(`[["1",%q,%q,"held"],["2",%q,%q,"waiting (position 1)"],["3",%q,%q,"waiting (position 2)"]]`,
		drawn.Entrants[0].CheckoutID, drawn.Entrants[0].Ticket, drawn.Entrants[1].CheckoutID, drawn.Entrants[1].Ticket,
		drawn.Entrants[2].CheckoutID, drawn.Entrants[2].Ticket)
	br.poll("item 4's drawn drop",
		fmt.Sprintf(`document.querySelector('#drop').dataset.phase === 'drawn' && %s === '3' && %s === %q && %s === %q &&
			document.querySelector('#drop-verify').dataset.verified === 'true' && %s === %q && /held 1 · waiting 2/.test(%s)`,
			text("#drop-entries"), text("#drop-commitment"), drawn.Commitment, text("#drop-seed"), drawn.Seed, order, want, text("#drop-outcomes")),
		wait, `document.querySelector('#drop').innerText + ' ' + `+order)
	br.shot("key-drop")

	br.do("open shop 1's drops and pre-orders", chromedp.Navigate(s.url+"/console/shops/1"), chromedp.WaitVisible(chromedp.CSS("#sales-link")),
		chromedp.Click(chromedp.CSS("#sales-link")), chromedp.WaitVisible(chromedp.CSS("#shop-drops")))
	keys := func(table string) string {
		return fmt.Sprintf(`JSON.stringify(Array.from(document.querySelectorAll('#%s tbody tr[data-key]')).map(function (tr) { return tr.dataset.key + ' ' + tr.cells[1].textContent; }))`, table)
	}
	window := func(d *holdfast.Drop) string {
		return fmt.Sprintf("window %s to %s", d.StartsAt.UTC().Format(console.TimeLayout), d.EndsAt().UTC().Format(console.TimeLayout))
	}
	wantDrops := fmt.Sprintf(`[%q,%q,%q]`, "4/1 "+window(drawn), "3/1 "+window(open), "2/1 "+window(scheduled))
	br.poll("shop 1 lists its drops", fmt.Sprintf(`%s === %q`, keys("shop-drops"), wantDrops), wait, keys("shop-drops"))
	wantPre := fmt.Sprintf(`[%q]`, "1/1 cap 5, expected "+expected.Format(console.TimeLayout))
	br.poll("shop 1 lists its pre-orders", fmt.Sprintf(`%s === %q`, keys("shop-preorders"), wantPre), wait, keys("shop-preorders"))
	br.shot("shop-drops")
}
