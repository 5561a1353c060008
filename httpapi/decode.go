package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// limits are the bounds request validation enforces. They mirror the
// engine's configuration (holdfast.Config), so a request the API accepts is
// one the engine accepts.
type limits struct {
	// LinesPerCartMax bounds a reservation's lines. Defaults to 100.
	LinesPerCartMax int
	// QuantityMax bounds one line's quantity. Defaults to 10,000.
	QuantityMax int
	// HoldLifetimeMax bounds ttl_seconds. Defaults to 1 hour.
	HoldLifetimeMax time.Duration
	// WaitMax bounds wait_seconds. Defaults to holdfast.WaitMaxDefault.
	WaitMax time.Duration
}

func (l limits) withDefaults() limits {
	if l.LinesPerCartMax <= 0 {
		l.LinesPerCartMax = holdfast.LinesPerCartMaxDefault
	}
	if l.QuantityMax <= 0 {
		l.QuantityMax = holdfast.QuantityMaxDefault
	}
	if l.HoldLifetimeMax <= 0 {
		l.HoldLifetimeMax = holdfast.HoldLifetimeMaxDefault
	}
	if l.WaitMax <= 0 {
		l.WaitMax = holdfast.WaitMaxDefault
	}
	return l
}

// object is a decoded JSON object whose members are checked one by one, so
// every error names the exact member at fault ("lines[3].quantity").
type object struct {
	prefix  string
	members map[string]json.RawMessage
}

// parseBody decodes a request body that must be exactly one JSON object
// with no members beyond allowed.
func parseBody(body []byte, allowed ...string) (*object, *apiError) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		if len(allowed) == 0 {
			return nil, badRequest(CodeMalformedJSON, "", "the body is empty")
		}
		return nil, badRequest(CodeMissingField, allowed[0], "the body is empty; send a JSON object with %s (members: %s)", allowed[0], strings.Join(allowed, ", "))
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, syntaxError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, badRequest(CodeMalformedJSON, "", "the body holds data after its JSON value")
	}
	return parseObject(raw, "", allowed...)
}

func syntaxError(err error) *apiError {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return badRequest(CodeMalformedJSON, "", "invalid JSON at byte %d: %s", se.Offset, se.Error())
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return badRequest(CodeMalformedJSON, "", "the JSON ends early")
	}
	return badRequest(CodeMalformedJSON, "", "invalid JSON: %s", err.Error())
}

// jsonType names the JSON type of a raw value for error messages.
func jsonType(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

func parseObject(raw json.RawMessage, prefix string, allowed ...string) (*object, *apiError) {
	where := strings.TrimSuffix(prefix, ".")
	if len(raw) == 0 || raw[0] != '{' {
		what := "the body"
		if where != "" {
			what = where
		}
		return nil, badRequest(CodeWrongType, where, "%s must be a JSON object, not %s", what, jsonType(raw))
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, badRequest(CodeMalformedJSON, where, "invalid JSON object: %s", err.Error())
	}
	if name, dup := duplicateMember(raw); dup {
		// encoding/json keeps the last; a proxy or log reader may take the
		// first. An ambiguous request is refused, not guessed at.
		return nil, badRequest(CodeMalformedJSON, prefix+name, "member %q appears more than once; send it once", name)
	}
	var unknown []string
	for k := range m {
		if !slices.Contains(allowed, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		if len(allowed) == 0 {
			return nil, badRequest(CodeUnknownField, prefix+unknown[0], "unknown member %q; this route takes no members (send no body, or {})", unknown[0])
		}
		return nil, badRequest(CodeUnknownField, prefix+unknown[0], "unknown member %q; allowed: %s", unknown[0], strings.Join(allowed, ", "))
	}
	return &object{prefix: prefix, members: m}, nil
}

// duplicateMember reports the first member name that appears twice in the
// JSON object raw (already known to be valid), compared after unescaping.
func duplicateMember(raw json.RawMessage) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return "", false
	}
	seen := map[string]struct{}{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return "", false
		}
		name, _ := t.(string)
		if _, ok := seen[name]; ok {
			return name, true
		}
		seen[name] = struct{}{}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return "", false
		}
	}
	return "", false
}

func (o *object) raw(name string, required bool) (json.RawMessage, *apiError) {
	v, ok := o.members[name]
	if !ok {
		if required {
			return nil, badRequest(CodeMissingField, o.prefix+name, "%s is required", o.prefix+name)
		}
		return nil, nil
	}
	return v, nil
}

// int64 reads an integer member within [lo, hi]. A number with a fraction
// or exponent is a wrong type (400); an integer beyond int64 or the bounds
// is out of range (422).
func (o *object) int64(name string, required bool, lo, hi int64) (int64, bool, *apiError) {
	raw, err := o.raw(name, required)
	if err != nil || raw == nil {
		return 0, false, err
	}
	v, apiErr := parseInt(o.prefix+name, raw, lo, hi)
	return v, apiErr == nil, apiErr
}

func parseInt(field string, raw json.RawMessage, lo, hi int64) (int64, *apiError) {
	s := string(raw)
	if jsonType(raw) != "a number" {
		return 0, badRequest(CodeWrongType, field, "%s must be an integer, not %s", field, jsonType(raw))
	}
	if strings.ContainsAny(s, ".eE") {
		return 0, badRequest(CodeWrongType, field, "%s must be an integer, not %s", field, s)
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
			return 0, invalid(field, "must be between %d and %d", lo, hi)
		}
		return 0, badRequest(CodeWrongType, field, "%s must be an integer", field)
	}
	if v < lo || v > hi {
		return 0, invalid(field, "must be between %d and %d", lo, hi)
	}
	return v, nil
}

// string reads a string member of at most maxLen bytes; required ones must
// not be empty.
func (o *object) string(name string, required bool, maxLen int) (string, *apiError) {
	raw, err := o.raw(name, required)
	if err != nil || raw == nil {
		return "", err
	}
	field := o.prefix + name
	if jsonType(raw) != "a string" {
		return "", badRequest(CodeWrongType, field, "%s must be a string, not %s", field, jsonType(raw))
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", badRequest(CodeMalformedJSON, field, "invalid string: %s", err.Error())
	}
	if required && s == "" {
		return "", invalid(field, "must not be empty")
	}
	if len(s) > maxLen {
		return "", invalid(field, "at most %d bytes", maxLen)
	}
	return s, nil
}

// parseCheckoutID accepts only the canonical 36-character UUID form.
func parseCheckoutID(field, s string) (uuid.UUID, *apiError) {
	id, err := uuid.Parse(s)
	if err != nil || len(s) != 36 {
		return uuid.Nil, invalid(field, "must be a UUID such as 6f1c2b9e-1d2a-4c53-9a51-3f5f1b0c7e42")
	}
	if id == uuid.Nil {
		return uuid.Nil, invalid(field, "must not be the nil UUID")
	}
	return id, nil
}

// parseID parses a positive int64 path segment.
func parseID(field, s string) (int64, *apiError) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, badRequest(CodeWrongType, field, "%s must be a positive integer", field)
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v <= 0 {
		return 0, invalid(field, "must be between 1 and %d", int64(1<<63-1))
	}
	return v, nil
}

// ttlSeconds reads ttl_seconds within [HoldTTLMin, HoldLifetimeMax].
func (o *object) ttlSeconds(required bool, lim limits) (time.Duration, *apiError) {
	lo, hi := int64(holdfast.HoldTTLMin/time.Second), int64(lim.HoldLifetimeMax/time.Second)
	v, ok, err := o.int64("ttl_seconds", required, lo, hi)
	if err != nil || !ok {
		return 0, err
	}
	return time.Duration(v) * time.Second, nil
}

// decodeReserve decodes and validates a reservation request body. On
// success the result is one the engine accepts; the engine still validates
// it (it is the authority).
func decodeReserve(shop int64, body []byte, lim limits) (holdfast.ReserveParams, *apiError) {
	lim = lim.withDefaults()
	p := holdfast.ReserveParams{ShopID: shop}
	o, err := parseBody(body, "checkout_id", "lines", "ttl_seconds", "wait_seconds", "buyer_id")
	if err != nil {
		return p, err
	}
	if p.Wait, err = o.waitSeconds(lim); err != nil { // waitlist.go
		return p, err
	}
	s, err := o.string("checkout_id", true, 64)
	if err != nil {
		return p, err
	}
	if p.CheckoutID, err = parseCheckoutID("checkout_id", s); err != nil {
		return p, err
	}
	raw, err := o.raw("lines", true)
	if err != nil {
		return p, err
	}
	if jsonType(raw) != "an array" {
		return p, badRequest(CodeWrongType, "lines", "lines must be an array, not %s", jsonType(raw))
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return p, badRequest(CodeMalformedJSON, "lines", "invalid array: %s", err.Error())
	}
	switch {
	case len(items) == 0:
		return p, invalid("lines", "a cart needs at least one line")
	case len(items) > lim.LinesPerCartMax:
		return p, invalid("lines", "at most %d lines per cart, got %d", lim.LinesPerCartMax, len(items))
	}
	seen := make(map[[2]int64]int, len(items))
	p.Lines = make([]holdfast.Line, len(items))
	for i, item := range items {
		prefix := fmt.Sprintf("lines[%d].", i)
		lo, err := parseObject(item, prefix, "item_id", "location_id", "quantity", "candidates", "split")
		if err != nil {
			return p, err
		}
		itemID, _, err := lo.int64("item_id", true, 1, 1<<63-1)
		if err != nil {
			return p, err
		}
		loc, _, err := lo.int64("location_id", true, 0, 1<<63-1) // 0: allocate
		if err != nil {
			return p, err
		}
		qty, _, err := lo.int64("quantity", true, 1, int64(lim.QuantityMax))
		if err != nil {
			return p, err
		}
		cands, split, err := decodeAllocation(lo, loc)
		if err != nil {
			return p, err
		}
		if err := allocatedTwice(p.Lines[:i], itemID, loc, i); err != nil {
			return p, err
		}
		k := [2]int64{itemID, loc}
		if j, dup := seen[k]; dup {
			return p, invalid(fmt.Sprintf("lines[%d]", i), "duplicates lines[%d] (item %d at location %d); merge them", j, itemID, loc)
		}
		seen[k] = i
		p.Lines[i] = holdfast.Line{ItemID: itemID, LocationID: loc, Quantity: int(qty), Candidates: cands, Split: split}
	}
	if p.BuyerID, err = decodeBuyerID(o); err != nil {
		return p, err
	}
	p.TTL, err = o.ttlSeconds(false, lim)
	return p, err
}

// decodeExtend decodes {"ttl_seconds": n}.
func decodeExtend(body []byte, lim limits) (time.Duration, *apiError) {
	lim = lim.withDefaults()
	o, err := parseBody(body, "ttl_seconds")
	if err != nil {
		return 0, err
	}
	return o.ttlSeconds(true, lim)
}

// AdjustmentIDMaxLen bounds an adjustment_id (or Idempotency-Key).
const AdjustmentIDMaxLen = 128

// decodeStock decodes {"<name>": n, "reason": "...", "reference": "...",
// "adjustment_id": "..."} where name is "available" (0..AvailableMax, a
// stocktake) or "delta" (-AvailableMax..AvailableMax). The change's ID is
// adjustment_id or the Idempotency-Key header (idemKey); when both are
// sent they must agree.
func decodeStock(body []byte, name, idemKey string) (holdfast.StockChange, *apiError) {
	var c holdfast.StockChange
	o, err := parseBody(body, name, "reason", "reference", "adjustment_id", "expected_available")
	if err != nil {
		return c, err
	}
	if c.ExpectAvailable, err = o.expectedAvailable(); err != nil { // stockcas.go
		return c, err
	}
	lo := int64(0)
	if name == "delta" {
		lo = -holdfast.AvailableMax
	}
	v, _, err := o.int64(name, true, lo, holdfast.AvailableMax)
	if err != nil {
		return c, err
	}
	if name == "delta" {
		c.Delta = int(v)
	} else {
		n := int(v)
		c.Set = &n
	}
	if c.Reason, err = o.string("reason", true, holdfast.ReasonMaxLen); err != nil {
		return c, err
	}
	if c.Reference, err = o.string("reference", false, holdfast.ReasonMaxLen); err != nil {
		return c, err
	}
	if c.ID, err = o.string("adjustment_id", false, AdjustmentIDMaxLen); err != nil {
		return c, err
	}
	if _, sent := o.members["adjustment_id"]; sent && c.ID == "" {
		// Taken as "no id", a retry would apply the change twice.
		return c, invalid("adjustment_id", "must not be empty; leave it out for a change without an id")
	}
	switch {
	case len(idemKey) > AdjustmentIDMaxLen:
		return c, invalid("Idempotency-Key", "at most %d bytes", AdjustmentIDMaxLen)
	case idemKey != "" && c.ID != "" && idemKey != c.ID:
		return c, invalid("adjustment_id", "differs from the Idempotency-Key header; send one, or the same value in both")
	case idemKey != "":
		c.ID = idemKey
	}
	return c, nil
}

// decodeEmpty accepts an absent body, or an empty JSON object: claim and
// release take no input.
func decodeEmpty(body []byte) *apiError {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	_, err := parseBody(body)
	return err
}
