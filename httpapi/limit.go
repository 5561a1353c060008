package httpapi

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// limiter bounds the database operations in flight: at most global at once
// in the whole server and at most perShop for any one shop, so one shop's
// flash sale cannot take every connection from the others. A request that
// finds no slot waits at most wait, then is turned away with 503 and
// Retry-After rather than queueing on the connection pool. It is safe for
// concurrent use.
type limiter struct {
	global  chan struct{}
	perShop int
	wait    time.Duration

	mu    sync.Mutex
	shops map[int64]*shopSlots
}

type shopSlots struct {
	sem  chan struct{}
	refs int // requests holding or waiting for a slot
}

func newLimiter(global, perShop int, wait time.Duration) *limiter {
	return &limiter{global: make(chan struct{}, global), perShop: perShop, wait: wait, shops: map[int64]*shopSlots{}}
}

// acquire takes a slot of shop (0: none, for work not tied to a shop) and
// a global slot, waiting at most l.wait in all. The returned func releases
// both.
func (l *limiter) acquire(ctx context.Context, shop int64) (func(), *apiError) {
	t := time.NewTimer(l.wait)
	defer t.Stop()
	var ss *shopSlots
	if shop != 0 {
		l.mu.Lock()
		ss = l.shops[shop]
		if ss == nil {
			ss = &shopSlots{sem: make(chan struct{}, l.perShop)}
			l.shops[shop] = ss
		}
		ss.refs++
		l.mu.Unlock()
		select {
		case ss.sem <- struct{}{}:
		case <-t.C:
			l.unref(shop, ss)
			return nil, overloaded("this shop has too many requests in flight")
		case <-ctx.Done():
			l.unref(shop, ss)
			return nil, toAPIError("", ctx.Err())
		}
	}
	select {
	case l.global <- struct{}{}:
	case <-t.C:
		l.releaseShop(shop, ss)
		return nil, overloaded("the server has too many requests in flight")
	case <-ctx.Done():
		l.releaseShop(shop, ss)
		return nil, toAPIError("", ctx.Err())
	}
	return func() {
		<-l.global
		l.releaseShop(shop, ss)
	}, nil
}

func (l *limiter) releaseShop(shop int64, ss *shopSlots) {
	if ss == nil {
		return
	}
	<-ss.sem
	l.unref(shop, ss)
}

func (l *limiter) unref(shop int64, ss *shopSlots) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ss.refs--
	if ss.refs == 0 {
		delete(l.shops, shop)
	}
}

func overloaded(msg string) *apiError {
	return &apiError{Status: http.StatusServiceUnavailable, Code: CodeOverloaded, Message: msg + "; retry shortly", RetryAfter: 1}
}
