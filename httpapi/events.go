package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/webhook"
	"github.com/holdfast/holdfast/wire"
)

// Route names of the event feed and the webhook registry.
const (
	routeEvents          = "events"
	routeEventsStream    = "events_stream"
	routeWebhookAdd      = "webhook_add"
	routeWebhookList     = "webhook_list"
	routeWebhookRemove   = "webhook_remove"
	routeWebhookDeadList = "webhook_dead_letters"
)

// Bounds of the event feed over HTTP.
const (
	// EventsWaitMax bounds a long poll's wait_seconds; the wait also ends
	// before the request's deadline (RequestTimeout, X-Request-Timeout).
	EventsWaitMax = 30 * time.Second
	// EventsPollInterval is how often a waiting long poll or stream reads
	// the feed again. The feed is in the database, so this is also how
	// fast another process's events are seen.
	EventsPollInterval = 100 * time.Millisecond
	// DeadLettersLimitDefault is the page of GET …/webhooks/dead-letters.
	DeadLettersLimitDefault = 100
)

func (ceilingEngine) Events(context.Context, int64, int64, int) ([]holdfast.Event, error) {
	return nil, holdfast.ErrUnavailable
}

func (s *Server) eventRoutes() {
	const base = "/v1/shops/{shop_id}"
	s.handle("GET "+base+"/events", routeEvents, routeOpts{}, s.events)
	s.mux.HandleFunc("GET "+base+"/events/stream", s.eventsStream)
	s.handle("POST "+base+"/webhooks", routeWebhookAdd, routeOpts{body: true}, s.webhookAdd)
	s.handle("GET "+base+"/webhooks", routeWebhookList, routeOpts{}, s.webhookList)
	s.handle("DELETE "+base+"/webhooks/{webhook_id}", routeWebhookRemove, routeOpts{optional: true}, s.webhookRemove)
	s.handle("GET "+base+"/webhooks/dead-letters", routeWebhookDeadList, routeOpts{}, s.webhookDeadLetters)
}

// query reads a request's query parameters: only the allowed names, each
// at most once, as non-negative integers within bounds.
type query struct {
	v url.Values
}

func parseQuery(r *http.Request, allowed ...string) (query, *apiError) {
	v, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return query{}, badRequest(CodeWrongType, "", "malformed query string: %v", err)
	}
	for name, vals := range v {
		ok := false
		for _, a := range allowed {
			ok = ok || a == name
		}
		if !ok {
			return query{}, badRequest(CodeUnknownField, name, "unknown query parameter %q (allowed: %s)", name, strings.Join(allowed, ", "))
		}
		if len(vals) > 1 {
			return query{}, badRequest(CodeWrongType, name, "%s given more than once", name)
		}
	}
	return query{v}, nil
}

func (q query) int(name string, def, lo, hi int64) (int64, *apiError) {
	s := q.v.Get(name)
	if s == "" && !q.v.Has(name) {
		return def, nil
	}
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, badRequest(CodeWrongType, name, "%s must be a non-negative integer", name)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, invalid(name, "must be between %d and %d", lo, hi)
	}
	return n, nil
}

// feedArgs reads after, limit and wait_seconds.
func feedArgs(r *http.Request, allowed ...string) (after int64, limit int, wait time.Duration, _ *apiError) {
	q, apiErr := parseQuery(r, allowed...)
	if apiErr != nil {
		return 0, 0, 0, apiErr
	}
	if after, apiErr = q.int("after", 0, 0, 1<<63-1); apiErr != nil {
		return 0, 0, 0, apiErr
	}
	l, apiErr := q.int("limit", holdfast.EventsLimitDefault, 1, holdfast.EventsLimitMax)
	if apiErr != nil {
		return 0, 0, 0, apiErr
	}
	w, apiErr := q.int("wait_seconds", 0, 0, int64(EventsWaitMax/time.Second))
	if apiErr != nil {
		return 0, 0, 0, apiErr
	}
	return after, int(l), time.Duration(w) * time.Second, nil
}

// events serves GET /v1/shops/{shop_id}/events?after=&limit=&wait_seconds=:
// the events after the cursor; with wait_seconds, an empty answer waits
// (long poll) until an event comes, the wait ends or the request's
// deadline nears.
func (s *Server) events(c *call) (int, any, error) {
	after, limit, wait, apiErr := feedArgs(c.r, "after", "limit", "wait_seconds")
	if apiErr != nil {
		return 0, nil, apiErr
	}
	until := time.Now().Add(wait)
	if dl, ok := c.ctx.Deadline(); ok && dl.Add(-EventsPollInterval).Before(until) {
		until = dl.Add(-EventsPollInterval)
	}
	for {
		var evs []holdfast.Event
		err := c.do(func(ctx context.Context) (err error) {
			evs, err = s.eng.Events(ctx, c.shop, after, limit)
			return err
		})
		if err != nil {
			return 0, nil, err
		}
		if len(evs) > 0 || !time.Now().Add(EventsPollInterval).Before(until) {
			page := wire.EventsPage{Events: evs, NextAfter: after}
			if page.Events == nil {
				page.Events = []holdfast.Event{}
			}
			if len(evs) > 0 {
				page.NextAfter = evs[len(evs)-1].Cursor
			}
			return http.StatusOK, page, nil
		}
		select {
		case <-c.ctx.Done():
			return 0, nil, c.ctx.Err()
		case <-time.After(EventsPollInterval):
		}
	}
}

// eventsStream serves GET /v1/shops/{shop_id}/events/stream as
// Server-Sent Events: each event as "id: <cursor>", "event: <type>",
// "data: <json>". It resumes after the Last-Event-ID header (else after=)
// and ends at the request's deadline; an EventSource reconnects by itself
// with Last-Event-ID, so nothing is missed or repeated.
func (s *Server) eventsStream(w http.ResponseWriter, r *http.Request) {
	info, _ := r.Context().Value(infoKey{}).(*reqInfo)
	info.route = routeEventsStream
	timeout, apiErr := s.timeout(r)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	c := &call{s: s, r: r, ctx: holdfast.WithTag(ctx, "http"), route: routeEventsStream}
	fail := func(err error) { writeError(w, s.apiErrorOf(routeEventsStream, err)) }
	if err := s.prepare(c, info, routeOpts{}); err != nil {
		fail(err)
		return
	}
	after, limit, _, apiErr := feedArgs(r, "after", "limit")
	if apiErr != nil {
		fail(apiErr)
		return
	}
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		n, err := strconv.ParseInt(id, 10, 64)
		if err != nil || n < 0 {
			fail(badRequest(CodeWrongType, "Last-Event-ID", "Last-Event-ID must be a non-negative integer (an event cursor)"))
			return
		}
		after = n
	}
	// The first page is read before the headers go out, so that a bad
	// cursor (cursor_expired) or an unavailable database is an answer.
	var evs []holdfast.Event
	if err := c.do(func(ctx context.Context) (err error) {
		evs, err = s.eng.Events(ctx, c.shop, after, limit)
		return err
	}); err != nil {
		fail(err)
		return
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "retry: %d\n\n", EventsPollInterval.Milliseconds()*10)
	_ = rc.Flush()
	for first := true; ; first = false {
		var err error
		if !first {
			err = c.do(func(ctx context.Context) (err error) {
				evs, err = s.eng.Events(ctx, c.shop, after, limit)
				return err
			})
		}
		if err != nil {
			// Headers are gone: end the stream; the client reconnects.
			if ctx.Err() == nil {
				s.log.Warn("event stream ended", "request_id", w.Header().Get("X-Request-Id"), "shop", c.shop, "error", err.Error())
			}
			return
		}
		for _, ev := range evs {
			b, _ := json.Marshal(ev)
			fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", ev.Cursor, ev.Type, b)
			after = ev.Cursor
		}
		if len(evs) > 0 {
			if rc.Flush() != nil {
				return
			}
		}
		if len(evs) == limit {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(EventsPollInterval):
		}
	}
}

// registry is the webhook registry in the server's database (the Store's).
// A registration first runs the engine's sequencing pass when it has one,
// so an endpoint registered without after starts past the key events
// derived from earlier events too.
func (s *Server) registry() *webhook.Registry {
	reg := webhook.NewRegistry(s.store.Webhooks()).With(s.cfg.Webhooks)
	if sq, ok := s.eng.(webhook.Sequencer); ok {
		reg = reg.SequencedBy(sq)
	}
	return reg
}

// adminOnly refuses keys that are not admin keys: webhook endpoints make
// holdfast call out to URLs, so only an operator's key registers them.
func (s *Server) adminOnly(c *call) error {
	p, err := s.bearer(c.ctx, c.r)
	if err != nil {
		return err
	}
	if !p.admin {
		return &apiError{Status: http.StatusForbidden, Code: CodeForbidden, Message: "webhook routes need an admin key (holdfast keys create --admin)"}
	}
	return nil
}

func webhookError(err error) error {
	switch {
	case errors.Is(err, webhook.ErrNotFound):
		return &apiError{Status: http.StatusNotFound, Code: CodeNotFound, Message: "no such webhook endpoint in this shop"}
	case errors.Is(err, webhook.ErrTooMany):
		return invalid("url", "the shop has %d webhook endpoints, the most allowed; remove one first", webhook.EndpointsPerShopMax)
	}
	return err
}

// webhookAdd serves POST /v1/shops/{shop_id}/webhooks {"url", "after"}.
func (s *Server) webhookAdd(c *call) (int, any, error) {
	if err := s.adminOnly(c); err != nil {
		return 0, nil, err
	}
	o, apiErr := parseBody(c.body, "url", "after")
	if apiErr != nil {
		return 0, nil, apiErr
	}
	u, apiErr := o.string("url", true, webhook.URLMaxLen)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	var after *int64
	if a, ok, apiErr := o.int64("after", false, 0, 1<<63-1); apiErr != nil {
		return 0, nil, apiErr
	} else if ok {
		after = &a
	}
	var ep *webhook.Endpoint
	err := c.do(func(ctx context.Context) (err error) {
		ep, err = s.registry().Add(ctx, c.shop, u, after)
		return err
	})
	if err != nil {
		return 0, nil, webhookError(err)
	}
	return http.StatusCreated, ep, nil
}

// webhookList serves GET /v1/shops/{shop_id}/webhooks.
func (s *Server) webhookList(c *call) (int, any, error) {
	if err := s.adminOnly(c); err != nil {
		return 0, nil, err
	}
	if _, apiErr := parseQuery(c.r); apiErr != nil {
		return 0, nil, apiErr
	}
	var eps []webhook.Endpoint
	err := c.do(func(ctx context.Context) (err error) {
		eps, err = s.registry().List(ctx, c.shop)
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"webhooks": eps}, nil
}

// webhookRemove serves DELETE /v1/shops/{shop_id}/webhooks/{webhook_id}.
func (s *Server) webhookRemove(c *call) (int, any, error) {
	if err := s.adminOnly(c); err != nil {
		return 0, nil, err
	}
	id, apiErr := parseID("webhook_id", c.r.PathValue("webhook_id"))
	if apiErr != nil {
		return 0, nil, apiErr
	}
	if apiErr := decodeEmpty(c.body); apiErr != nil {
		return 0, nil, apiErr
	}
	var ep *webhook.Endpoint
	err := c.do(func(ctx context.Context) (err error) {
		ep, err = s.registry().Remove(ctx, c.shop, id)
		return err
	})
	if err != nil {
		return 0, nil, webhookError(err)
	}
	return http.StatusOK, ep, nil
}

// webhookDeadLetters serves GET /v1/shops/{shop_id}/webhooks/dead-letters.
func (s *Server) webhookDeadLetters(c *call) (int, any, error) {
	if err := s.adminOnly(c); err != nil {
		return 0, nil, err
	}
	q, apiErr := parseQuery(c.r, "limit")
	if apiErr != nil {
		return 0, nil, apiErr
	}
	limit, apiErr := q.int("limit", DeadLettersLimitDefault, 1, webhook.DeadLettersLimitMax)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	var dls []webhook.DeadLetter
	err := c.do(func(ctx context.Context) (err error) {
		dls, err = s.registry().DeadLetters(ctx, c.shop, int(limit))
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"dead_letters": dls}, nil
}
