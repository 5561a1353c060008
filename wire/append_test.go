package wire

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
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
	now := Time{time.Date(2026, 11, 30, 18, 0, 0, 123456789, time.UTC)}
	end := Time{now.Add(time.Minute)}
	for _, h := range []Hold{
		{CheckoutID: uuid.MustParse("6f1c2b9e-1d2a-4c53-9a51-3f5f1b0c7e42"), ShopID: 1, Status: "held",
			Lines: []Line{{1, 2, 3, 0, nil}}, CreatedAt: now, ExpiresAt: Time{now.Add(15 * time.Minute)}, Deadline: Time{now.Add(time.Hour)}},
		{CheckoutID: uuid.New(), ShopID: 1 << 62, Status: "claimed", Lines: []Line{{1, 2, 3, 0, nil}, {9223372036854775807, 1, 10000, 0, nil}},
			CreatedAt: Time{now.Truncate(time.Second)}, ExpiresAt: now, Deadline: now, EndedAt: &end},
		{CheckoutID: uuid.New(), Status: "expired", Lines: []Line{}},
	} {
		checkAppendJSON(t, h)
	}
}

// TestAppendJSONRevisionReleased: the hand-written encoding of a hold with
// a revision and released lines (a partial claim) is byte for byte what
// encoding/json writes, as TestAppendJSON checks for the other members.
func TestAppendJSONRevisionReleased(t *testing.T) {
	now := Time{time.Date(2026, 11, 30, 18, 0, 0, 123456789, time.UTC)}
	end := Time{now.Add(time.Minute)}
	for _, h := range []Hold{
		{CheckoutID: uuid.New(), ShopID: 1, Status: "held", Lines: []Line{{1, 2, 3, 0, nil}}, CreatedAt: now, ExpiresAt: now, Deadline: now, Revision: 7},
		{CheckoutID: uuid.New(), ShopID: 1, Status: "claimed", Lines: []Line{{1, 2, 1, 0, nil}}, CreatedAt: now, ExpiresAt: now, Deadline: now,
			EndedAt: &end, Revision: 1 << 53, Released: []Line{{1, 2, 2, 0, nil}, {9223372036854775807, 1, 10000, 0, nil}}},
		{CheckoutID: uuid.New(), Status: "expired", Lines: []Line{}, Claimable: true, Revision: 2, Released: []Line{}},
	} {
		checkAppendJSON(t, h)
	}
}

// TestTimeSixDigits: every time on the wire has exactly six fractional
// digits, trailing zeros kept (docs show 2026-11-30T12:00:00.000000Z; the
// answers dropped them), and reads back as the same instant.
func TestTimeSixDigits(t *testing.T) {
	for in, want := range map[time.Time]string{
		time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC):                  `"2026-11-30T12:00:00.000000Z"`,
		time.Date(2026, 11, 30, 12, 0, 0, 600000000, time.UTC):          `"2026-11-30T12:00:00.600000Z"`,
		time.Date(2026, 11, 30, 12, 42, 24, 900795000, time.UTC):        `"2026-11-30T12:42:24.900795Z"`,
		time.Date(2026, 11, 30, 13, 0, 0, 0, time.FixedZone("x", 3600)): `"2026-11-30T12:00:00.000000Z"`,
	} {
		b, err := json.Marshal(Time{in})
		if err != nil || string(b) != want {
			t.Errorf("%v: %s %v, want %s", in, b, err, want)
		}
		var back Time
		if err := json.Unmarshal(b, &back); err != nil || !back.Equal(in) {
			t.Errorf("%s read back as %v %v", b, back, err)
		}
	}
	h := Hold{CheckoutID: uuid.New(), Status: "held", Lines: []Line{}, CreatedAt: Time{time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}}
	if got := string(h.AppendJSON(nil)); !strings.Contains(got, `"created_at":"2026-11-30T12:00:00.000000Z"`) {
		t.Errorf("AppendJSON: %s", got)
	}
}

// TestAppendJSONEveryMember: a hold with every member set. A member added
// to Hold fails here until the test sets it, and then until AppendJSON
// writes it as encoding/json does.
func TestAppendJSONEveryMember(t *testing.T) {
	now := Time{time.Date(2026, 11, 30, 18, 0, 0, 5, time.UTC)}
	end := Time{now.Add(time.Second)}
	full := Hold{CheckoutID: uuid.New(), ShopID: 3, Status: "expired", Lines: []Line{{1, 2, 3, 0, nil}, {4, 2, 5, 2, &end}},
		CreatedAt: now, ExpiresAt: now, Deadline: now, EndedAt: &end, Claimable: true, Revision: 4, Released: []Line{{5, 6, 7, 0, nil}}}
	into := uuid.New()
	full.MergedInto = &into
	v := reflect.ValueOf(full)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("the test does not set Hold.%s", v.Type().Field(i).Name)
		}
	}
	checkAppendJSON(t, full)
}

// TestEventTimesSixDigits: an event of the feed and of webhooks writes its
// times like every other time on the wire, its members in the order
// encoding/json gives the struct.
func TestEventTimesSixDigits(t *testing.T) {
	id := uuid.MustParse("6f1c2b9e-1d2a-4c53-9a51-3f5f1b0c7e42")
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	exp := at.Add(15 * time.Minute)
	d, n := -2, 8
	for _, e := range []holdfast.Event{
		{Cursor: 1, ShopID: 1, Type: "hold.created", CheckoutID: &id, Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 2}}, ExpiresAt: &exp, At: at},
		{Cursor: 2, ShopID: 1, Type: "stock.changed", ItemID: 4, LocationID: 1, Delta: &d, Available: &n, Reason: "a&b <c>", Reference: "r", At: at.Add(600 * time.Millisecond)},
	} {
		got, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		type plain holdfast.Event // the reflection encoding, for the members and their order
		want, _ := json.Marshal(plain(e))
		fix := strings.NewReplacer(`"2026-11-30T12:00:00Z"`, `"2026-11-30T12:00:00.000000Z"`, `"2026-11-30T12:15:00Z"`, `"2026-11-30T12:15:00.000000Z"`,
			`"2026-11-30T12:00:00.6Z"`, `"2026-11-30T12:00:00.600000Z"`)
		if string(got) != fix.Replace(string(want)) {
			t.Errorf("event\n got %s\nwant %s", got, fix.Replace(string(want)))
		}
	}
}
