package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/client"
	"github.com/holdfast/holdfast/httpapi"
	"github.com/holdfast/holdfast/postgres/pgstore"
)

// TestClientEvents: the client pages the feed, long-polls for the next
// event, follows the feed until its handler stops it, and reports a bad
// query as an argument error naming the parameter.
func TestClientEvents(t *testing.T) {
	t.Parallel()
	hc, url, key, _ := server(t)
	ctx := context.Background()
	c := client.New(url, key)
	k := holdfast.Key{ShopID: 1, ItemID: 7, LocationID: 1}
	if _, err := c.SetAvailable(ctx, k, 10, "stocktake", ""); err != nil {
		t.Fatal(err)
	}
	co := uuid.New()
	if _, err := c.Reserve(ctx, 1, client.ReserveRequest{CheckoutID: co, Lines: []holdfast.Line{{ItemID: 7, LocationID: 1, Quantity: 2}}}); err != nil {
		t.Fatal(err)
	}

	// Paging: one event per page, in cursor order, as the engine has them.
	want, err := hc.Events(ctx, 1, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var got []holdfast.Event
	after := int64(0)
	for {
		p, err := c.Events(ctx, client.EventsQuery{ShopID: 1, After: after, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Events) == 0 {
			if p.NextAfter != after {
				t.Fatalf("an empty page answered next_after %d after %d", p.NextAfter, after)
			}
			break
		}
		got = append(got, p.Events...)
		after = p.NextAfter
	}
	if len(got) != 2 || len(want) != 2 {
		t.Fatalf("client read %d events, engine has %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Cursor != w.Cursor || g.Type != w.Type || !g.At.Equal(w.At) {
			t.Errorf("event %d: client %+v, engine %+v", i, g, w)
		}
	}
	if got[1].Type != holdfast.EventHoldCreated || got[1].CheckoutID == nil || *got[1].CheckoutID != co {
		t.Fatalf("second event %+v, want hold.created of %v", got[1], co)
	}

	// A long poll answers with the event that comes while it waits.
	polled := make(chan *client.EventsPage, 1)
	go func() {
		p, err := c.Events(ctx, client.EventsQuery{ShopID: 1, After: after, Wait: 8 * time.Second})
		if err != nil {
			t.Error(err)
		}
		polled <- p
	}()
	if _, err := c.Claim(ctx, 1, co); err != nil {
		t.Fatal(err)
	}
	p := <-polled
	if p == nil {
		t.FailNow()
	}
	if len(p.Events) != 1 || p.Events[0].Type != holdfast.EventHoldClaimed || p.NextAfter != after+1 {
		t.Fatalf("long poll after %d: %+v", after, p)
	}

	// Follow hands over every event after the cursor, in order, and stops
	// with the handler's error.
	stop := errors.New("enough")
	var followed []int64
	err = c.Follow(ctx, 1, 0, func(e holdfast.Event) error {
		followed = append(followed, e.Cursor)
		if e.Cursor == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || len(followed) != 3 || followed[0] != 1 || followed[2] != 3 {
		t.Fatalf("follow: %v after %v, want cursors 1..3 then the handler's error", err, followed)
	}
	// Follow ends with its context.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.Follow(cctx, 1, 3, func(holdfast.Event) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("follow with a cancelled context: %v", err)
	}

	// Bad input is typed and names the parameter; a shop's key reaches
	// only its own feed.
	_, err = c.Events(ctx, client.EventsQuery{ShopID: 1, Limit: -1})
	var ae *client.Error
	if !errors.Is(err, holdfast.ErrInvalidArgument) || !errors.As(err, &ae) || ae.Field != "limit" {
		t.Fatalf("limit -1: %v", err)
	}
	if _, err := c.Events(ctx, client.EventsQuery{ShopID: 2}); !errors.As(err, &ae) || ae.Status != 403 {
		t.Fatalf("another shop's feed: %v", err)
	}
}

// TestClientWebhooks: an admin key registers, lists and removes endpoints
// and reads dead letters through the client; a shop key is refused; bad
// input names its field; an unknown endpoint is not_found.
func TestClientWebhooks(t *testing.T) {
	t.Parallel()
	hc, url, shopKey, _ := server(t)
	ctx := context.Background()
	admin, _, err := httpapi.CreateKey(ctx, pgstore.Service(hc.Pool()), 0, true)
	if err != nil {
		t.Fatal(err)
	}
	c := client.New(url, admin)

	ep, err := c.AddWebhook(ctx, 1, "https://example.com/hook", nil)
	if err != nil {
		t.Fatal(err)
	}
	if ep.ID == 0 || ep.ShopID != 1 || ep.URL != "https://example.com/hook" || ep.Secret == "" {
		t.Fatalf("registered %+v", ep)
	}
	five := int64(5)
	ep2, err := c.AddWebhook(ctx, 1, "https://example.com/other", &five)
	if err != nil || ep2.Cursor != 5 {
		t.Fatalf("registered after 5: %+v %v", ep2, err)
	}
	list, err := c.Webhooks(ctx, 1)
	if err != nil || len(list) != 2 {
		t.Fatalf("list: %+v %v", list, err)
	}
	for _, e := range list {
		if e.Secret != "" {
			t.Fatalf("a listing shows a secret: %+v", e)
		}
	}
	gone, err := c.RemoveWebhook(ctx, 1, ep.ID)
	if err != nil || gone.ID != ep.ID {
		t.Fatalf("remove: %+v %v", gone, err)
	}
	var ae *client.Error
	if _, err := c.RemoveWebhook(ctx, 1, ep.ID); !errors.As(err, &ae) || ae.Code != "not_found" {
		t.Fatalf("remove twice: %v", err)
	}
	if list, err := c.Webhooks(ctx, 1); err != nil || len(list) != 1 || list[0].ID != ep2.ID {
		t.Fatalf("list after remove: %+v %v", list, err)
	}
	if dls, err := c.DeadLetters(ctx, 1, 10); err != nil || len(dls) != 0 {
		t.Fatalf("dead letters: %+v %v", dls, err)
	}

	if _, err := c.AddWebhook(ctx, 1, "ftp://example.com/x", nil); !errors.Is(err, holdfast.ErrInvalidArgument) || !errors.As(err, &ae) || ae.Field != "url" {
		t.Fatalf("an ftp url: %v", err)
	}
	if _, err := c.DeadLetters(ctx, 1, -1); !errors.As(err, &ae) || ae.Field != "limit" {
		t.Fatalf("limit -1: %v", err)
	}
	if _, err := client.New(url, shopKey).Webhooks(ctx, 1); !errors.As(err, &ae) || ae.Status != 403 {
		t.Fatalf("a shop key lists webhooks: %v", err)
	}
	if list, err := c.Webhooks(ctx, 1); err != nil || len(list) != 1 {
		t.Fatalf("refusals changed the endpoints: %+v %v", list, err)
	}
}

// TestClientEventsCursorExpired (#24 item 2): a cursor whose next events
// were purged is a *holdfast.CursorExpiredError (and an *Error matching
// holdfast.ErrCursorExpired) with the oldest cursor still available; the
// client never pages past the gap silently.
func TestClientEventsCursorExpired(t *testing.T) {
	t.Parallel()
	hc, url, key, _ := server(t)
	ctx := context.Background()
	c := client.New(url, key)
	k := holdfast.Key{ShopID: 1, ItemID: 7, LocationID: 1}
	for i := 1; i <= 3; i++ {
		if _, err := c.SetAvailable(ctx, k, i, "stocktake", ""); err != nil {
			t.Fatal(err)
		}
	}
	if evs, err := hc.Events(ctx, 1, 0, 0); err != nil || len(evs) != 3 {
		t.Fatalf("feed: %+v, %v", evs, err)
	}
	// The retention purge took the first two.
	if _, err := hc.Pool().Exec(ctx, "DELETE FROM holdfast_events WHERE shop_id = 1 AND seq <= 2"); err != nil {
		t.Fatal(err)
	}
	_, err := c.Events(ctx, client.EventsQuery{ShopID: 1, After: 1})
	var ce *holdfast.CursorExpiredError
	var ae *client.Error
	if !errors.As(err, &ce) || ce.After != 1 || ce.Oldest != 2 || !errors.Is(err, holdfast.ErrCursorExpired) ||
		!errors.As(err, &ae) || ae.Status != 410 || ae.Code != "cursor_expired" || ae.OldestCursor != 2 {
		t.Fatalf("after=1 with events 1..2 purged: %v; want cursor_expired with oldest cursor 2", err)
	}
	p, err := c.Events(ctx, client.EventsQuery{ShopID: 1, After: ce.Oldest})
	if err != nil || len(p.Events) != 1 || p.Events[0].Cursor != 3 {
		t.Fatalf("after the oldest cursor: %+v, %v", p, err)
	}
	err = c.Follow(ctx, 1, 0, func(holdfast.Event) error { return errors.New("handed an event past the gap") })
	if !errors.Is(err, holdfast.ErrCursorExpired) {
		t.Fatalf("Follow from 0: %v; want it to end with cursor_expired", err)
	}
}
