package httpapi

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestAppendHoldRevisionReleased: the hand-written encoding of a hold with
// a revision and released lines (a partial claim) is byte for byte what
// encoding/json writes, as TestAppendHold checks for the other members.
func TestAppendHoldRevisionReleased(t *testing.T) {
	now := time.Date(2026, 11, 30, 18, 0, 0, 123456789, time.UTC)
	end := now.Add(time.Minute)
	for _, h := range []holdJSON{
		{CheckoutID: uuid.New(), ShopID: 1, Status: "held", Lines: []lineJSON{{1, 2, 3}}, CreatedAt: now, ExpiresAt: now, Deadline: now, Revision: 7},
		{CheckoutID: uuid.New(), ShopID: 1, Status: "claimed", Lines: []lineJSON{{1, 2, 1}}, CreatedAt: now, ExpiresAt: now, Deadline: now,
			EndedAt: &end, Revision: 1 << 53, Released: []lineJSON{{1, 2, 2}, {9223372036854775807, 1, 10000}}},
		{CheckoutID: uuid.New(), Status: "expired", Lines: []lineJSON{}, Claimable: true, Revision: 2, Released: []lineJSON{}},
	} {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(h); err != nil {
			t.Fatal(err)
		}
		if got := appendHold(nil, &h); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("appendHold\n got %s\nwant %s", got, want.Bytes())
		}
	}
}
