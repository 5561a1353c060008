// Package httpapi is holdfast's HTTP/JSON service (`holdfast serve`): the
// reservation engine behind a small, strict API. It translates only: every
// rule about stock and holds is the engine's.
//
// The routes, statuses and error codes are documented in openapi.json
// (embedded, served at /openapi.json; see OpenAPI) and docs/API.md. In
// short:
//
//   - Every error is {"error": {"code", "message", "field", "request_id"}},
//     and each code has one status. 400 for a body or path segment of the
//     wrong shape (malformed_json, unknown_field, missing_field,
//     wrong_type); 422 invalid_argument for a well-formed value out of
//     bounds; 409 for conflicts with a checkout's state, 410 hold_expired;
//     401/403 for keys and scopes; 413 above BodyMax; 415 without
//     application/json; 503 (with Retry-After) when the database is
//     unavailable or a request cannot be served within its deadline; 500
//     outcome_unknown when a stock change's commit was not acknowledged.
//   - The server speaks to a holdfast.Engine (Config.Engine) and keeps API
//     keys and the webhook registry in a Store (Config.Store), both given
//     by cmd/holdfast: the package imports no engine and links no driver
//     (pgstore.Service or mysqlstore.Service, under each database's
//     folder). Keys are looked up by SHA-256 in api_keys and compared in
//     constant time (CreateKey, CreateKeyWith, RotateKey, RevokeKey,
//     ListKeys on any Store). A shop key reaches one shop, within
//     its scopes (storefront, inventory); an admin key reaches all. Keys of
//     the wrong shape never reach the database; unknown ones are cached
//     briefly and looked up under their own bound (KeyLookupsMax).
//   - Admission bounds connections, not requests (see admission):
//     Config.MaxInFlight connection slots, round robin over per-shop queues
//     and work-conserving; one-line reservations the engine combines wait
//     in its combiner instead of a slot. 503 overloaded only when a request
//     cannot be served within its own deadline.
//   - One log line per request (log/slog) with route, shop, status, latency
//     and X-Request-Id; keys are never logged.
//   - Metrics on Config.Registry (served by MetricsHandler on its own
//     address, or on the API's /metrics to an admin key): requests and latency by route and
//     outcome, requests in flight, the pool's statistics, and whatever
//     Config.Collectors adds (metrics.Engine for the engine's events, pgops
//     samplers).
//
// Server.Serve runs the server and Config.Workers until its context ends,
// then drains requests in flight and stops the workers.
package httpapi
