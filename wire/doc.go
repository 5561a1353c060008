// Package wire is the JSON shape of holdfast's HTTP API, defined once: the
// server (package httpapi) writes these types and the Go client (package
// client) reads them. Each type converts to and from the root package's
// noun it carries (a Hold from a holdfast.Hold and back, ...).
//
// A change here changes the HTTP contract: httpapi's tests hold every answer
// to httpapi/openapi.json, and Hold.AppendJSON, the hot path's encoder, is
// held byte for byte to encoding/json by this package's tests.
//
// The types hold no behaviour beyond conversion and are safe to copy; they
// are not safe for concurrent mutation.
package wire
