package httpapi

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/holdfast/holdfast"
)

// FuzzDecodeReserve checks reservation decoding and validation: it never
// panics, refuses with 400 or 422 and a code, and what it accepts is within
// every bound and survives a round trip through JSON unchanged.
func FuzzDecodeReserve(f *testing.F) {
	for _, s := range []string{
		`{"checkout_id":"6f1c2b9e-1d2a-4c53-9a51-3f5f1b0c7e42","lines":[{"item_id":7,"location_id":1,"quantity":2}]}`,
		`{"checkout_id":"6f1c2b9e-1d2a-4c53-9a51-3f5f1b0c7e42","lines":[{"item_id":7,"location_id":1,"quantity":2},{"item_id":8,"location_id":2,"quantity":10000}],"ttl_seconds":3600}`,
		`{"checkout_id":"6f1c2b9e-1d2a-4c53-9a51-3f5f1b0c7e42","lines":[{"item_id":7,"location_id":1,"quantity":2},{"item_id":7,"location_id":1,"quantity":1}]}`,
		`{"checkout_id":"6f1c2b9e-1d2a-4c53-9a51-3f5f1b0c7e42","lines":[{"item_id":9223372036854775808,"location_id":1,"quantity":1}]}`,
		`{"checkout_id":"6f1c2b9e-1d2a-4c53-9a51-3f5f1b0c7e42","lines":[{"item_id":7,"location_id":1,"quantity":1.5}]}`,
		`{"checkout_id":"6f1c2b9e-1d2a-4c53-9a51-3f5f1b0c7e42","lines":[{"item_id":7,"location_id":1,"quantity":1e2}]}`,
		`{"checkout_id":"6f1c2b9e-1d2a-4c53-9a51-3f5f1b0c7e42","lines":[{"item_id":7,"location_id":1,"quantity":-0}]}`,
		`{"checkout_id":"6f1c2b9e-1d2a-4c53-9a51-3f5f1b0c7e42","lines":[],"ttl_seconds":0}`,
		`{"checkout_id":"{6f1c2b9e-1d2a-4c53-9a51-3f5f1b0c7e42}","lines":[{"item_id":7,"location_id":1,"quantity":1}]}`,
		`{"checkout_id":"6F1C2B9E-1D2A-4C53-9A51-3F5F1B0C7E42","lines":[{"item_id":7,"location_id":1,"quantity":1}]}`,
		`{"checkout_id":"00000000-0000-0000-0000-000000000000","lines":[{"item_id":7,"location_id":1,"quantity":1}]}`,
		`{"checkout_id":"6f1c2b9e-1d2a-4c53-9a51-3f5f1b0c7e42","checkout_id":"x","lines":[{"item_id":7,"location_id":1,"quantity":1}]}`,
		`{"checkout_id":null,"lines":null,"ttl_seconds":null}`,
		`{"lines":[[]]}`,
		`{"checkout_id":"6f1c2b9e-1d2a-4c53-9a51-3f5f1b0c7e42","lines":[{"item_id":7,"location_id":1,"quantity":1}]} {}`,
		`[{"checkout_id":"6f1c2b9e-1d2a-4c53-9a51-3f5f1b0c7e42"}]`,
		`{"checkout_id":"\u0000","lines":[{"item_id":7,"location_id":1,"quantity":1,"x":1}]}`,
		`{"checkout_id":"6f1c2b9e-1d2a-4c53-9a51-3f5f1b0c7e42","lines":[{"item_id":7,"location_id":1,"quantity":1}],"ttl_seconds":1}`,
		`{`, ``, `null`, `"x"`, `{}`, "\xff\xfe",
		` { "lines" : [ { "quantity" : 3 , "location_id" : 2 , "item_id" : 1 } ] , "ttl_seconds" : 60 , "checkout_id" : "6f1c2b9e-1d2a-4c53-9a51-3f5f1b0c7e42" } `,
		`{"checkout_id":"6f1c2b9e-1d2a-4c53-9a51-3f5f1b0c7e42","lines":[{"item_id":07,"location_id":1,"quantity":1}]}`,
		`{"checkout_id":"6f1c2b9e-1d2a-4c53-9a51-3f5f1b0c7e42","lines":[{"item_id":999999999999999999,"location_id":1,"quantity":100}],"ttl_seconds":3600}`,
		`{"checkout_id":"6f1c2b9e-1d2a-4c53-9a51-3f5f1b0c7e42","lines":[{"item_id":1,"location_id":1,"quantity":1},]}`,
	} {
		f.Add([]byte(s))
	}
	lim := limits{LinesPerCartMax: 5, QuantityMax: 100, HoldLifetimeMax: time.Hour}
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := decodeReserve(1, body, lim)
		// The hot path's decoder accepts only what the strict one does,
		// with the same result.
		if fp, ok := fastReserve(1, body, lim); ok && (err != nil || !reflect.DeepEqual(fp, p)) {
			t.Fatalf("fastReserve accepted %q as %+v; decodeReserve: %+v, %v", body, fp, p, err)
		}
		if err != nil {
			if (err.Status != http.StatusBadRequest && err.Status != http.StatusUnprocessableEntity) || err.Code == "" || err.Message == "" {
				t.Fatalf("bad refusal %+v for %q", err, body)
			}
			return
		}
		checkAccepted(t, p, lim, body)
		// Round trip: the accepted request, encoded again, decodes the same.
		// holdfast.Line's JSON is the wire's (allocated lines included).
		type wireLine = holdfast.Line
		w := struct {
			CheckoutID string     `json:"checkout_id"`
			Lines      []wireLine `json:"lines"`
			TTL        *int64     `json:"ttl_seconds,omitempty"`
		}{CheckoutID: p.CheckoutID.String()}
		for _, l := range p.Lines {
			w.Lines = append(w.Lines, l)
		}
		if p.TTL != 0 {
			s := int64(p.TTL / time.Second)
			w.TTL = &s
		}
		again, _ := json.Marshal(w)
		p2, err := decodeReserve(1, again, lim)
		if err != nil {
			t.Fatalf("re-encoded %s refused: %v (from %q)", again, err, body)
		}
		if !reflect.DeepEqual(p, p2) {
			t.Fatalf("round trip changed %+v to %+v", p, p2)
		}
	})
}

func checkAccepted(t *testing.T, p holdfast.ReserveParams, lim limits, body []byte) {
	t.Helper()
	if p.CheckoutID == [16]byte{} || p.ShopID != 1 {
		t.Fatalf("accepted %q with checkout %v", body, p.CheckoutID)
	}
	if len(p.Lines) == 0 || len(p.Lines) > lim.LinesPerCartMax {
		t.Fatalf("accepted %d lines: %q", len(p.Lines), body)
	}
	seen := map[[2]int64]bool{}
	for _, l := range p.Lines {
		if l.ItemID <= 0 || l.LocationID <= 0 || l.Quantity <= 0 || l.Quantity > lim.QuantityMax {
			t.Fatalf("accepted line %+v: %q", l, body)
		}
		k := [2]int64{l.ItemID, l.LocationID}
		if seen[k] {
			t.Fatalf("accepted duplicate line %+v: %q", l, body)
		}
		seen[k] = true
	}
	if p.TTL != 0 && (p.TTL < holdfast.HoldTTLMin || p.TTL > lim.HoldLifetimeMax || p.TTL%time.Second != 0) {
		t.Fatalf("accepted ttl %v: %q", p.TTL, body)
	}
}

// TestFastReserveUsualShapes: the hot path's decoder takes the shapes
// clients send (else every request would pay for the strict decoder).
func TestFastReserveUsualShapes(t *testing.T) {
	lim := limits{}.withDefaults()
	for _, body := range []string{
		`{"checkout_id":"6f1c2b9e-1d2a-4c53-9a51-3f5f1b0c7e42","lines":[{"item_id":7,"location_id":1,"quantity":2}]}`,
		"{\n  \"checkout_id\": \"6f1c2b9e-1d2a-4c53-9a51-3f5f1b0c7e42\",\n  \"lines\": [{\"item_id\": 7, \"location_id\": 1, \"quantity\": 2}, {\"item_id\": 8, \"location_id\": 1, \"quantity\": 1}],\n  \"ttl_seconds\": 600\n}\n",
	} {
		fp, ok := fastReserve(1, []byte(body), lim)
		p, err := decodeReserve(1, []byte(body), lim)
		if !ok || err != nil || !reflect.DeepEqual(fp, p) {
			t.Fatalf("%s: fast %v %+v, strict %+v %v", body, ok, fp, p, err)
		}
	}
}
