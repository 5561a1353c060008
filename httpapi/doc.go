// Package httpapi is holdfast's HTTP/JSON service (`holdfast serve`): the
// reservation engine behind a small, strict API. It translates only: every
// rule about stock and holds is the engine's.
//
// The routes, statuses and error codes are documented in openapi.json
// (embedded, served at /openapi.json; see OpenAPI) and docs/API.md. In
// short:
//
//   - Every error is {"error": {"code", "message", "field"}}. 400 for a body
//     or path segment of the wrong shape (malformed_json, unknown_field,
//     missing_field, wrong_type); 422 invalid_argument for a well-formed
//     value out of bounds; 409/410 for conflicts with a checkout's state;
//     401/403 for keys; 413 above BodyMax; 415 without application/json;
//     503 (with Retry-After) when the database is unavailable or the
//     server is at its in-flight limit.
//   - Bearer keys are looked up by SHA-256 in api_keys and compared in
//     constant time (CreateKey, RevokeKey, ListKeys manage them). A shop
//     key reaches one shop; an admin key reaches all.
//   - Database work is bounded: Config.MaxInFlight in all and
//     Config.PerShopInFlight per shop, with a short wait (Config.QueueWait)
//     before 503 overloaded, so one shop cannot take every connection.
//   - One log line per request (log/slog) with route, shop, status, latency
//     and X-Request-Id; keys are never logged.
//   - Metrics on Config.Registry: requests and latency by route and
//     outcome, requests in flight, the pool's statistics, and whatever
//     Config.Collectors adds (metrics.Engine for the engine's events, ops
//     samplers).
//
// Server.Serve runs the server and Config.Workers until its context ends,
// then drains requests in flight and stops the workers.
package httpapi
