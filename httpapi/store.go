package httpapi

import (
	"context"
	"errors"
	"time"

	"github.com/holdfast/holdfast/webhook"
)

// Store is what the service keeps itself, beside the engine's tables, in
// the engine's database: its API keys (the api_keys table), the webhook
// registry, the console's reads and its readiness. There is one per
// database, under that database's folder: postgres/pgstore.Service and
// mysql/mysqlstore.Service; cmd/holdfast picks one by --engine (the
// server imports no engine). A Store that is also a prometheus.Collector
// (both are: their pool's statistics) is registered with the server's
// metrics. Implementations must be safe for concurrent use.
type Store interface {
	// InsertKey stores a new key's record under the SHA-256 of the key and
	// fills in rec's ID and CreatedAt (the database's clock).
	InsertKey(ctx context.Context, hash []byte, rec *APIKey) error
	// LookupKey returns the key with this hash, live or not (see
	// StoredKey.Revoked and Expired), found false when there is none.
	LookupKey(ctx context.Context, hash []byte) (k StoredKey, found bool, err error)
	// TouchKey records a key's use.
	TouchKey(ctx context.Context, id int64) error
	// RevokeKey revokes the live key with this id (0: by hash) or hash
	// (nil: by id) and returns its id, or ErrKeyNotFound.
	RevokeKey(ctx context.Context, id int64, hash []byte) (int64, error)
	// RotateKey, in one transaction, stores newHash as a key with the
	// shop, scopes and name of the live key with this id or hash, and
	// makes the old one expire after grace; ErrKeyNotFound when no live
	// key matches.
	RotateKey(ctx context.Context, id int64, hash, newHash []byte, grace time.Duration) (*APIKey, error)
	// ListKeys returns at most limit keys, newest first.
	ListKeys(ctx context.Context, limit int) ([]APIKey, error)
	// AdminLive reports whether the key with this id is a live admin key.
	AdminLive(ctx context.Context, id int64) (bool, error)
	// Shops lists at most n shop ids with stock, in id order.
	Shops(ctx context.Context, n int) ([]int64, error)
	// EventsHead is a shop's newest event cursor (the console's).
	EventsHead(ctx context.Context, shop int64) (int64, error)
	// Ready checks that the database answers and its schema is this
	// build's, and returns that schema version. A schema that is behind or
	// ahead is an error wrapping ErrSchemaNotCurrent (SchemaError).
	Ready(ctx context.Context) (version int, err error)
	// Webhooks is the webhook registry's store in the same database.
	Webhooks() webhook.Store
	// Unreachable reports errors of the database connection itself, met
	// outside the engine (key lookups, readiness): the engine maps its own
	// to holdfast.ErrUnavailable, and each database's packages are the
	// one place that classifies its errors.
	Unreachable(err error) bool
}

// StoredKey is a key's record, as authentication needs it.
type StoredKey struct {
	ID     int64
	Hash   []byte
	Name   string // the audit log's name of the key
	Shop   int64  // 0 for admin
	Admin  bool
	Scopes []Scope
	// Left is how long until it expires, by the database's clock; nil:
	// never.
	Left *time.Duration
	// Revoked and Expired: the key is not live (a refusal says which).
	Revoked, Expired bool
}

// ErrSchemaNotCurrent marks a Ready error of a schema behind or ahead of
// this build (503 schema_not_current from /readyz).
var ErrSchemaNotCurrent = errors.New("schema not current")

// SchemaError wraps err as ErrSchemaNotCurrent, keeping its message.
func SchemaError(err error) error { return schemaError{err: err} }

type schemaError struct{ err error }

func (e schemaError) Error() string   { return e.err.Error() }
func (e schemaError) Unwrap() []error { return []error{e.err, ErrSchemaNotCurrent} }
