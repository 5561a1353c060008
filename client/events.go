package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/webhook"
	"github.com/holdfast/holdfast/wire"
)

// EventsQuery asks for a page of a shop's event feed (GET
// /v1/shops/{shop}/events).
type EventsQuery struct {
	ShopID int64
	// After is the last cursor handled (0: from the start of the feed).
	After int64
	// Limit is the most events in the answer (0: the server's default,
	// 100).
	Limit int
	// Wait makes an empty answer wait for events (a long poll), in whole
	// seconds, at most httpapi.EventsWaitMax (30 s); the server also ends
	// the wait before the request's deadline.
	Wait time.Duration
}

// EventsPage is one answer of the feed.
type EventsPage struct {
	Events []holdfast.Event
	// NextAfter is the cursor to ask after next: the last event's, or the
	// After asked when there was none.
	NextAfter int64
}

// Events reads a page of a shop's events after q.After, in cursor order.
// Any key of the shop may read the feed. A rejected query is an *Error
// matching holdfast.ErrInvalidArgument, naming the query parameter. A
// cursor whose next events were purged (410 cursor_expired) answers a
// *holdfast.CursorExpiredError (and the *Error) with the oldest cursor
// still available; Follow ends with it.
func (c *Client) Events(ctx context.Context, q EventsQuery) (*EventsPage, error) {
	v := url.Values{}
	if q.After != 0 {
		v.Set("after", strconv.FormatInt(q.After, 10))
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Wait > 0 {
		// Whole seconds on the wire; a part second rounds up so a wait
		// asked is never dropped.
		v.Set("wait_seconds", strconv.FormatInt(int64((q.Wait+time.Second-1)/time.Second), 10))
	}
	path := fmt.Sprintf("/v1/shops/%d/events", q.ShopID)
	if len(v) > 0 {
		path += "?" + v.Encode()
	}
	var page wire.EventsPage
	if _, err := c.do(ctx, http.MethodGet, path, nil, &page, true); err != nil {
		var e *Error
		if errors.As(err, &e) && e.Code == "cursor_expired" {
			// As the library answers: the events after q.After were
			// purged; e.OldestCursor is where the feed now starts.
			return nil, fmt.Errorf("%w (%w)", &holdfast.CursorExpiredError{After: q.After, Oldest: e.OldestCursor}, e)
		}
		return nil, err
	}
	return &EventsPage{Events: page.Events, NextAfter: page.NextAfter}, nil
}

// FollowWait is the long poll Follow asks for: well inside the default
// http.Client's 30-second timeout and the server's 10-second request
// deadline.
const FollowWait = 5 * time.Second

// Follow calls handle with each of a shop's events after the cursor after,
// in cursor order, long-polling for new ones, until ctx is done or handle
// returns an error (Follow then returns it). It resumes where it left off
// across transient failures (holdfast.ErrUnavailable: the server
// restarting, a dropped connection), backing off up to a second between
// tries; any other error ends it. An event is handed over at least once:
// persist the last cursor handled and pass it as after to resume.
func (c *Client) Follow(ctx context.Context, shopID, after int64, handle func(holdfast.Event) error) error {
	backoff := 50 * time.Millisecond
	for {
		p, err := c.Events(ctx, EventsQuery{ShopID: shopID, After: after, Wait: FollowWait})
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, holdfast.ErrUnavailable):
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, time.Second)
			continue
		case err != nil:
			return err
		}
		backoff = 50 * time.Millisecond
		for _, e := range p.Events {
			if err := handle(e); err != nil {
				return err
			}
			after = e.Cursor
		}
	}
}

// AddWebhook registers an endpoint that receives the shop's events (POST
// /v1/shops/{shop}/webhooks; an admin key). after, when not nil, is the
// cursor to deliver after (default: after every event committed before the
// registration, so only new events).
// The answer carries the endpoint's signing secret, shown only here; check
// deliveries with webhook.Verify.
func (c *Client) AddWebhook(ctx context.Context, shopID int64, endpointURL string, after *int64) (*webhook.Endpoint, error) {
	body := map[string]any{"url": endpointURL}
	if after != nil {
		body["after"] = *after
	}
	var ep webhook.Endpoint
	// Not idempotent: a lost answer may have registered the endpoint;
	// Webhooks lists what exists.
	if _, err := c.do(ctx, http.MethodPost, fmt.Sprintf("/v1/shops/%d/webhooks", shopID), body, &ep, false); err != nil {
		return nil, err
	}
	return &ep, nil
}

// Webhooks lists a shop's endpoints with their delivery state (an admin
// key).
func (c *Client) Webhooks(ctx context.Context, shopID int64) ([]webhook.Endpoint, error) {
	var out struct {
		Webhooks []webhook.Endpoint `json:"webhooks"`
	}
	if _, err := c.do(ctx, http.MethodGet, fmt.Sprintf("/v1/shops/%d/webhooks", shopID), nil, &out, true); err != nil {
		return nil, err
	}
	return out.Webhooks, nil
}

// RemoveWebhook removes an endpoint and returns it as it was (an admin
// key). An unknown id is an *Error with code not_found.
func (c *Client) RemoveWebhook(ctx context.Context, shopID, id int64) (*webhook.Endpoint, error) {
	var ep webhook.Endpoint
	if _, err := c.do(ctx, http.MethodDelete, fmt.Sprintf("/v1/shops/%d/webhooks/%d", shopID, id), nil, &ep, true); err != nil {
		return nil, err
	}
	return &ep, nil
}

// DeadLetters lists the events a shop's endpoints did not accept within the
// retry horizon, newest first (an admin key); limit 0 asks for the
// server's default page.
func (c *Client) DeadLetters(ctx context.Context, shopID int64, limit int) ([]webhook.DeadLetter, error) {
	path := fmt.Sprintf("/v1/shops/%d/webhooks/dead-letters", shopID)
	if limit != 0 {
		path += "?limit=" + strconv.Itoa(limit)
	}
	var out struct {
		DeadLetters []webhook.DeadLetter `json:"dead_letters"`
	}
	if _, err := c.do(ctx, http.MethodGet, path, nil, &out, true); err != nil {
		return nil, err
	}
	return out.DeadLetters, nil
}
