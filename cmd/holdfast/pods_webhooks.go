package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/holdfast/holdfast/httpapi"
	"github.com/holdfast/holdfast/pods"
	"github.com/holdfast/holdfast/webhook"
)

// podsWebhooks is serve's webhook registry store over pods: a shop's
// endpoints and dead letters live on the shop's pod, beside its events
// (a shop move carries them), so each call of a shop goes to its pod's
// store. Delivery does not go through it: serve runs a Deliverer on each
// pod's store and engine (podsDeliverers).
type podsWebhooks struct {
	r      *pods.Router
	stores map[string]webhook.Store
}

var _ webhook.Store = podsWebhooks{}

// errDeliveryPerPod: delivery leases endpoints pod by pod.
var errDeliveryPerPod = errors.New("pods: webhook delivery runs on each pod's store")

func (p podsWebhooks) of(ctx context.Context, shop int64, assign bool) (webhook.Store, error) {
	name, err := p.r.PodOf(ctx, shop, assign)
	if err != nil {
		return nil, err
	}
	s := p.stores[name]
	if s == nil {
		return nil, fmt.Errorf("pods: no webhook store for pod %s", name)
	}
	return s, nil
}

func (p podsWebhooks) InsertEndpoint(ctx context.Context, shop int64, url, secret string, after *int64, max int) (*webhook.Endpoint, error) {
	s, err := p.of(ctx, shop, true)
	if err != nil {
		return nil, err
	}
	return s.InsertEndpoint(ctx, shop, url, secret, after, max)
}

func (p podsWebhooks) ListEndpoints(ctx context.Context, shop int64) ([]webhook.Endpoint, error) {
	s, err := p.of(ctx, shop, false)
	if err != nil {
		return nil, err
	}
	return s.ListEndpoints(ctx, shop)
}

func (p podsWebhooks) DeleteEndpoint(ctx context.Context, shop, id int64) (*webhook.Endpoint, error) {
	s, err := p.of(ctx, shop, false)
	if err != nil {
		return nil, err
	}
	return s.DeleteEndpoint(ctx, shop, id)
}

func (p podsWebhooks) DeadLetters(ctx context.Context, shop int64, limit int) ([]webhook.DeadLetter, error) {
	s, err := p.of(ctx, shop, false)
	if err != nil {
		return nil, err
	}
	return s.DeadLetters(ctx, shop, limit)
}

func (p podsWebhooks) Lease(context.Context, time.Duration, int) ([]webhook.Leased, error) {
	return nil, errDeliveryPerPod
}

func (p podsWebhooks) Unlease(ctx context.Context, shop, id, token int64) error {
	s, err := p.of(ctx, shop, false)
	if err != nil {
		return err
	}
	return s.Unlease(ctx, shop, id, token)
}

func (p podsWebhooks) Delivered(ctx context.Context, shop, id, token, cursor int64) error {
	s, err := p.of(ctx, shop, false)
	if err != nil {
		return err
	}
	return s.Delivered(ctx, shop, id, token, cursor)
}

func (p podsWebhooks) Failed(ctx context.Context, shop, id, token int64, attempts int, msg string, wait, horizon time.Duration) (bool, error) {
	s, err := p.of(ctx, shop, false)
	if err != nil {
		return false, err
	}
	return s.Failed(ctx, shop, id, token, attempts, msg, wait, horizon)
}

func (p podsWebhooks) DeadLetter(ctx context.Context, id, shop, token, cursor int64, event []byte, attempts int, msg string) error {
	s, err := p.of(ctx, shop, false)
	if err != nil {
		return err
	}
	return s.DeadLetter(ctx, id, shop, token, cursor, event, attempts, msg)
}

// podsServiceStore is the control database's service store (API keys)
// with the webhook registry over the pods.
type podsServiceStore struct {
	httpapi.Store
	hooks webhook.Store
}

func (s podsServiceStore) Webhooks() webhook.Store { return s.hooks }

// podsDeliverers delivers every pod's webhooks: a Deliverer per pod, on
// that pod's store and engine, each bounded as serve's one is. A shop's
// endpoints are delivered by its pod's deliverer; a moving shop's are
// skipped while fenced (lease.sql), and continue from their cursor on the
// target after the move (at least once: an event delivered just before
// the fence, whose cursor the fence kept from being stored, comes again).
type podsDeliverers []*webhook.Deliverer

func (d podsDeliverers) Start(ctx context.Context) {
	for _, x := range d {
		x.Start(ctx)
	}
}

func (d podsDeliverers) Stop(ctx context.Context) error {
	var errs []error
	for _, x := range d {
		errs = append(errs, x.Stop(ctx))
	}
	return errors.Join(errs...)
}
