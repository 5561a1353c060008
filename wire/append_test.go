package wire

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"
)

// checkAppendJSON fails unless h.AppendJSON writes what encoding/json does.
func checkAppendJSON(t *testing.T, h Hold) {
	t.Helper()
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(h); err != nil {
		t.Fatal(err)
	}
	if got := h.AppendJSON(nil); !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("AppendJSON\n got %s\nwant %s", got, want.Bytes())
	}
}

// TestAppendJSON: the hand-written encoding of a hold is byte for byte
// what encoding/json writes.
func TestAppendJSON(t *testing.T) {
	now := time.Date(2026, 11, 30, 18, 0, 0, 123456789, time.UTC)
	end := now.Add(time.Minute)
	for _, h := range []Hold{
		{CheckoutID: uuid.MustParse("6f1c2b9e-1d2a-4c53-9a51-3f5f1b0c7e42"), ShopID: 1, Status: "held",
			Lines: []Line{{1, 2, 3}}, CreatedAt: now, ExpiresAt: now.Add(15 * time.Minute), Deadline: now.Add(time.Hour)},
		{CheckoutID: uuid.New(), ShopID: 1 << 62, Status: "claimed", Lines: []Line{{1, 2, 3}, {9223372036854775807, 1, 10000}},
			CreatedAt: now.Truncate(time.Second), ExpiresAt: now, Deadline: now, EndedAt: &end},
		{CheckoutID: uuid.New(), Status: "expired", Lines: []Line{}},
	} {
		checkAppendJSON(t, h)
	}
}

// TestAppendJSONRevisionReleased: the hand-written encoding of a hold with
// a revision and released lines (a partial claim) is byte for byte what
// encoding/json writes, as TestAppendJSON checks for the other members.
func TestAppendJSONRevisionReleased(t *testing.T) {
	now := time.Date(2026, 11, 30, 18, 0, 0, 123456789, time.UTC)
	end := now.Add(time.Minute)
	for _, h := range []Hold{
		{CheckoutID: uuid.New(), ShopID: 1, Status: "held", Lines: []Line{{1, 2, 3}}, CreatedAt: now, ExpiresAt: now, Deadline: now, Revision: 7},
		{CheckoutID: uuid.New(), ShopID: 1, Status: "claimed", Lines: []Line{{1, 2, 1}}, CreatedAt: now, ExpiresAt: now, Deadline: now,
			EndedAt: &end, Revision: 1 << 53, Released: []Line{{1, 2, 2}, {9223372036854775807, 1, 10000}}},
		{CheckoutID: uuid.New(), Status: "expired", Lines: []Line{}, Claimable: true, Revision: 2, Released: []Line{}},
	} {
		checkAppendJSON(t, h)
	}
}

// TestAppendJSONEveryMember: a hold with every member set. A member added
// to Hold fails here until the test sets it, and then until AppendJSON
// writes it as encoding/json does.
func TestAppendJSONEveryMember(t *testing.T) {
	now := time.Date(2026, 11, 30, 18, 0, 0, 5, time.UTC)
	end := now.Add(time.Second)
	full := Hold{CheckoutID: uuid.New(), ShopID: 3, Status: "expired", Lines: []Line{{1, 2, 3}},
		CreatedAt: now, ExpiresAt: now, Deadline: now, EndedAt: &end, Claimable: true, Revision: 4, Released: []Line{{5, 6, 7}}}
	v := reflect.ValueOf(full)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("the test does not set Hold.%s", v.Type().Field(i).Name)
		}
	}
	checkAppendJSON(t, full)
}
