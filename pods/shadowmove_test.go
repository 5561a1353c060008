package pods_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/holdfast/holdfast/pods"
)

// TestMoveCarriesShadowHistory moves a shop migrated from the legacy store
// (shadow mode changes and disagreement samples on its pod) onto a pod
// whose own shop has such rows with the same ids: both methods carry the
// rows, the target's shop keeps its own, and the target's sequences go on
// past the copied ids (migration 23 keyed these tables by shop; before,
// a move refused such a shop).
func TestMoveCarriesShadowHistory(t *testing.T) {
	for _, method := range []string{pods.MethodStream, pods.MethodCopy} {
		t.Run(method, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := newMoveSetup(t, pods.Config{})
			if _, err := s.m.Assign(ctx, 1, "a"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.m.Assign(ctx, 2, "b"); err != nil {
				t.Fatal(err)
			}
			stock(t, s.r, 1, 10)
			stock(t, s.r, 2, 10)
			for _, p := range []*podDB{s.a, s.b} {
				shop := int64(1)
				if p == s.b {
					shop = 2
				}
				// The same ids (1, 2) on both pods.
				for i := 0; i < 2; i++ {
					if _, err := p.pool.Exec(ctx, `INSERT INTO holdfast_shadow_samples (shop_id, op, kind, request, legacy, holdfast)
						VALUES ($1, 'reserve', 'outcome:held/insufficient_stock', '{}', '{}', '{}')`, shop); err != nil {
						t.Fatal(err)
					}
					if _, err := p.pool.Exec(ctx, `INSERT INTO holdfast_shadow_mode_changes (shop_id, from_mode, to_mode, reason)
						VALUES ($1, 'legacy', 'shadow', 'test')`, shop); err != nil {
						t.Fatal(err)
					}
				}
			}
			rep, err := pods.Move(ctx, pods.MoveParams{ShopID: 1, To: "b", Method: method, Stores: s.stores, Router: s.r, PurgeDelay: time.Millisecond})
			if err != nil {
				t.Fatalf("move of a shop with shadow history: %v", err)
			}
			if rep.Method != method {
				t.Fatalf("moved by %s, want %s", rep.Method, method)
			}
			for _, q := range []string{
				"SELECT count(*) FROM holdfast_shadow_samples WHERE shop_id = %d",
				"SELECT count(*) FROM holdfast_shadow_mode_changes WHERE shop_id = %d",
			} {
				for shop := int64(1); shop <= 2; shop++ {
					if c := count(t, s.b, fmt.Sprintf(q, shop)); c != 2 {
						t.Fatalf("pod b: %s = %d, want 2", fmt.Sprintf(q, shop), c)
					}
				}
			}
			// The source's rows go with the purge.
			waitCount(t, s.a, 0, "SELECT count(*) FROM holdfast_shadow_samples WHERE shop_id = 1")
			// The next sample of shop 1 on b gets an id past the copied ones.
			var id, max int64
			if err := s.b.pool.QueryRow(ctx, `SELECT max(id) FROM holdfast_shadow_samples`).Scan(&max); err != nil {
				t.Fatal(err)
			}
			if err := s.b.pool.QueryRow(ctx, `INSERT INTO holdfast_shadow_samples (shop_id, op, kind, request, legacy, holdfast)
				VALUES (1, 'reserve', 'agree', '{}', '{}', '{}') RETURNING id`).Scan(&id); err != nil {
				t.Fatalf("a new sample of the moved shop on b: %v", err)
			}
			if id <= max {
				t.Fatalf("new sample id %d, want past the copied ids (max %d)", id, max)
			}
			if _, err := s.r.Reserve(ctx, cart(1)); err != nil {
				t.Fatalf("reserve on the moved shop: %v", err)
			}
			checkInvariant(t, "a", s.a.eng)
			checkInvariant(t, "b", s.b.eng)
		})
	}
}
