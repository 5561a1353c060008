package pgmove

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/holdfast/holdfast/pods"
)

// A streamed move (pods.Streamer) is PostgreSQL's logical replication
// restricted to one shop: on the source a publication of every shop table
// with a row filter `shop_id = N` (migration 15 keyed every such table by
// shop_id, so the filter's column is in each replica identity and the
// source's updates and deletes of other shops go on as before) and a
// slot; on the target a subscription with the initial copy. The target
// marks the shop incoming first, so its own workers leave the arriving
// rows alone and its engine refuses the shop's writes; the subscription's
// apply runs as a replica, which fires neither the placement guard nor the
// derived-row triggers (derived rows arrive as rows). Under the fence the
// mover writes a mark (migration 20) on the source and waits for it on the
// target, then raises the target's sequences past the shop's ids — the
// publication carries rows, not sequences — and disables the
// subscription. Stop drops the subscription, the slots and the
// publication, in that order, before the source is purged: the purge's
// deletes must not reach the target.
//
// Needs: wal_level = logical on the source; a superuser on both (CREATE
// SUBSCRIPTION, replication slots); the source reachable from the
// target's server as the source's pool reaches it (host, port, database,
// user, password).

// Bounds of a streamed move.
const (
	// streamPoll is how often the mover looks at the stream's progress.
	streamPoll = 20 * time.Millisecond
	// markPoll is how often the catch-up looks for its mark on the target
	// (the shop is fenced meanwhile).
	markPoll = 2 * time.Millisecond
	// streamErrorsMax is how many sync or apply errors of the stream's
	// subscription (pg_stat_subscription_stats) stop the move: the server
	// retries each (wal_retrieve_retry_interval, 5 s by default), so a
	// passing shortage costs one or two.
	streamErrorsMax = 5
)

// streamName is the publication, subscription and slot of a shop's stream.
func streamName(shopID int64) string { return fmt.Sprintf("holdfast_move_%d", shopID) }

var _ pods.Streamer = (*Store)(nil)

type stream struct {
	src, dst *Store
	shop     int64
	name     string // the publication's and the subscription's
}

// slotName is the shop's stream slot on this pod (the source).
func (s *Store) slotName(ctx context.Context, shopID int64) (string, error) {
	var name string
	err := s.pool.QueryRow(ctx, statements.Tagged(route, "slot_name"), shopID).Scan(&name)
	return name, err
}

// Stream implements pods.Streamer.
func (s *Store) Stream(ctx context.Context, shopID int64, to pods.MoveStore, fromPod string) (_ pods.Stream, err error) {
	dst, ok := to.(*Store)
	if !ok {
		return nil, fmt.Errorf("%w: the target is not a PostgreSQL pod (%T)", pods.ErrStreamUnavailable, to)
	}
	if err := s.streamable(ctx, true); err != nil {
		return nil, err
	}
	if err := dst.streamable(ctx, false); err != nil {
		return nil, err
	}
	st := &stream{src: s, dst: dst, shop: shopID, name: streamName(shopID)}
	var exists bool
	if err := s.pool.QueryRow(ctx, statements.Tagged(route, "publication_exists"), st.name).Scan(&exists); err != nil {
		return nil, err
	}
	if exists {
		return nil, fmt.Errorf("%w: shop %d has a stream on the source from an earlier move; run pods abort first", pods.ErrMoveRefused, shopID)
	}
	tabs, err := s.tables(ctx, s.pool)
	if err != nil {
		return nil, err
	}
	if err := refuseUnkeyed(ctx, s.pool, tabs, shopID); err != nil {
		return nil, err
	}
	if err := dst.checkTarget(ctx, tabs, shopID, fromPod); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pods.MoveStepTimeout)
			defer cancel()
			if serr := st.Stop(uctx); serr != nil {
				err = fmt.Errorf("%w; ending the stream failed too (run pods abort): %w", err, serr)
			} else if derr := dst.Discard(uctx, shopID); derr != nil && !errors.Is(derr, pods.ErrMoveRefused) {
				err = fmt.Errorf("%w; deleting the target's copy failed too (run pods abort): %w", err, derr)
			}
		}
	}()
	// The publication: the shop's rows of every shop table (partitioned
	// ones at their root, as one table) and its marks.
	parts := make([]string, 0, len(tabs)+1)
	for _, t := range append(tabs, table{name: "holdfast_move_marks", keyed: true}) {
		if t.keyed {
			parts = append(parts, fmt.Sprintf("TABLE %s WHERE (shop_id = %d)", pgx.Identifier{t.name}.Sanitize(), shopID))
		}
	}
	if _, err := s.pool.Exec(ctx, fmt.Sprintf("CREATE PUBLICATION %s FOR %s WITH (publish = 'insert, update, delete', publish_via_partition_root = true)",
		pgx.Identifier{st.name}.Sanitize(), strings.Join(parts, ", "))); err != nil {
		return nil, fmt.Errorf("pgmove: publishing shop %d: %w", shopID, err)
	}
	slot, err := s.slotName(ctx, shopID)
	if err != nil {
		return nil, err
	}
	if _, err := s.pool.Exec(ctx, statements.Tagged(route, "slot_create"), slot); err != nil {
		return nil, fmt.Errorf("pgmove: the stream's slot: %w", err)
	}
	if _, err := dst.pool.Exec(ctx, fmt.Sprintf("CREATE SUBSCRIPTION %s CONNECTION %s PUBLICATION %s WITH (create_slot = false, slot_name = %s, copy_data = true)",
		pgx.Identifier{st.name}.Sanitize(), quoteLiteral(s.connInfo()), pgx.Identifier{st.name}.Sanitize(), quoteLiteral(slot))); err != nil {
		return nil, fmt.Errorf("pgmove: subscribing the target to shop %d: %w", shopID, err)
	}
	// Wait for the copy: every table ready (copied, and caught up with the
	// changes made meanwhile).
	for {
		var n, pending, errs int64
		if err := dst.pool.QueryRow(ctx, statements.Tagged(route, "stream_ready"), st.name).Scan(&n, &pending, &errs); err != nil {
			return nil, fmt.Errorf("pgmove: the stream's progress: %w", err)
		}
		switch {
		case errs >= streamErrorsMax:
			// A sync or apply error is retried by the server (a slot or a
			// WAL sender short for a moment passes); one that keeps
			// coming would retry forever.
			return nil, fmt.Errorf("pgmove: the subscription of shop %d met %d errors (the target's log says which)", shopID, errs)
		case n > 0 && pending == 0:
			return st, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("pgmove: waiting for the copy of shop %d (%d of %d tables copied): %w", shopID, n-pending, n, context.Cause(ctx))
		case <-time.After(streamPoll):
		}
	}
}

// streamable answers pods.ErrStreamUnavailable when this pod cannot take
// part in a stream (as its source: wal_level logical).
func (s *Store) streamable(ctx context.Context, source bool) error {
	var level string
	var marks bool
	if err := s.pool.QueryRow(ctx, statements.Tagged(route, "stream_check")).Scan(&level, &marks); err != nil {
		return err
	}
	if !marks {
		return fmt.Errorf("%w: the pod's schema is older than version 20 (holdfast migrate)", pods.ErrStreamUnavailable)
	}
	if source && level != "logical" {
		return fmt.Errorf("%w: the source's wal_level is %s, not logical", pods.ErrStreamUnavailable, level)
	}
	return nil
}

// refuseUnkeyed refuses a shop with rows in a table keyed by id alone (a
// move cannot carry those yet: they would collide with the target's own).
func refuseUnkeyed(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, tabs []table, shopID int64) error {
	for _, t := range tabs {
		if t.keyed {
			continue
		}
		var has bool
		if err := q.QueryRow(ctx, "SELECT EXISTS ("+t.selectOf(shopID)+")").Scan(&has); err != nil {
			return err
		}
		if has {
			return fmt.Errorf("%w: shop %d has rows in %s, keyed by id alone: a move cannot carry them yet", pods.ErrMoveRefused, shopID, t.name)
		}
	}
	return nil
}

// checkTarget marks the shop incoming on the target, which must have the
// source's tables and none of the shop's rows.
func (s *Store) checkTarget(ctx context.Context, src []table, shopID int64, fromPod string) error {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck
	var marked int64
	if err := tx.QueryRow(ctx, statements.Tagged(route, "mark_incoming"), shopID, fromPod).Scan(&marked); errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%w: shop %d is marked incoming on the target already", pods.ErrMoveRefused, shopID)
	} else if err != nil {
		return err
	}
	dtabs, err := s.tables(ctx, tx)
	if err != nil {
		return err
	}
	for _, t := range src {
		i := indexOf(dtabs, t)
		if i < 0 {
			return fmt.Errorf("%w: table %s differs between the pods (migrate both to the same version)", pods.ErrMoveRefused, t.name)
		}
		var has bool
		if err := tx.QueryRow(ctx, "SELECT EXISTS ("+t.selectOf(shopID)+")").Scan(&has); err != nil {
			return err
		}
		if has {
			return fmt.Errorf("%w: the target holds rows of shop %d in %s", pods.ErrMoveRefused, shopID, t.name)
		}
	}
	return tx.Commit(ctx)
}

func indexOf(tabs []table, t table) int {
	for i, d := range tabs {
		if d.name == t.name && len(d.cols) == len(t.cols) {
			same := true
			for j := range d.cols {
				same = same && d.cols[j] == t.cols[j]
			}
			if same {
				return i
			}
		}
	}
	return -1
}

// CatchUp implements pods.Stream.
func (st *stream) CatchUp(ctx context.Context, pf pods.Fence) error {
	f, ok := pf.(*fence)
	if !ok || f.conn == nil || f.shop != st.shop {
		return fmt.Errorf("%w: not a live fence of shop %d on this store", pods.ErrMoveRefused, st.shop)
	}
	// Rows the stream would not carry may have come while the shop traded.
	tabs, err := st.src.tables(ctx, f.conn)
	if err != nil {
		return err
	}
	if err := refuseUnkeyed(ctx, f.conn, tabs, st.shop); err != nil {
		return err
	}
	mark := time.Now().UnixNano()
	// Committed with a flush whatever the server's synchronous_commit: a
	// walsender sends only flushed WAL.
	if err := pgx.BeginFunc(ctx, f.conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL synchronous_commit = on"); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, statements.Tagged(route, "mark_insert"), st.shop, mark)
		return err
	}); err != nil {
		return fmt.Errorf("pgmove: the catch-up's mark: %w", err)
	}
	for {
		var seen bool
		if err := st.dst.pool.QueryRow(ctx, statements.Tagged(route, "mark_seen"), st.shop, mark).Scan(&seen); err != nil {
			return err
		}
		if seen {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pgmove: waiting for the target to apply shop %d's last changes: %w", st.shop, context.Cause(ctx))
		case <-time.After(markPoll):
		}
	}
	if _, err := st.dst.pool.Exec(ctx, "ALTER SUBSCRIPTION "+pgx.Identifier{st.name}.Sanitize()+" DISABLE"); err != nil {
		return err
	}
	tx, err := st.dst.pool.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck
	for _, t := range tabs {
		for _, col := range t.serials {
			if err := advance(ctx, tx, t, col, st.shop); err != nil {
				return fmt.Errorf("pgmove: advancing %s.%s's sequence: %w", t.name, col, err)
			}
		}
	}
	return tx.Commit(ctx)
}

// Stop implements pods.Stream.
func (st *stream) Stop(ctx context.Context) error {
	if err := st.dst.dropSubscription(ctx, st.shop, st.src); err != nil {
		return err
	}
	return st.src.dropSource(ctx, st.shop, true)
}

// DropStreams implements pods.Streamer: the shop's subscription here (its
// source's slots stay for that pod's DropStreams), then its publication
// and the slots no subscriber holds.
func (s *Store) DropStreams(ctx context.Context, shopID int64) error {
	if err := s.dropSubscription(ctx, shopID, nil); err != nil {
		return err
	}
	return s.dropSource(ctx, shopID, false)
}

// dropSubscription drops the shop's subscription on this pod, if any,
// without reaching its source (slot_name = NONE): src, when known, drops
// the slots it used, table syncs' included.
func (s *Store) dropSubscription(ctx context.Context, shopID int64, src *Store) error {
	name := streamName(shopID)
	var oid uint32
	err := s.pool.QueryRow(ctx, statements.Tagged(route, "subscription_oid"), name).Scan(&oid)
	if errors.Is(err, pgx.ErrNoRows) {
		_, err = s.pool.Exec(ctx, statements.Tagged(route, "marks_delete"), shopID)
		return err
	}
	if err != nil {
		return err
	}
	id := pgx.Identifier{name}.Sanitize()
	for _, q := range []string{"ALTER SUBSCRIPTION " + id + " DISABLE", "ALTER SUBSCRIPTION " + id + " SET (slot_name = NONE)", "DROP SUBSCRIPTION " + id} {
		if _, err := s.pool.Exec(ctx, q); err != nil {
			return fmt.Errorf("pgmove: dropping the subscription of shop %d: %w", shopID, err)
		}
	}
	if _, err := s.pool.Exec(ctx, statements.Tagged(route, "marks_delete"), shopID); err != nil {
		return err
	}
	if src != nil {
		slot, err := src.slotName(ctx, shopID)
		if err != nil {
			return err
		}
		return src.dropSlots(ctx, slot, fmt.Sprintf("pg_%d_sync_", oid), true)
	}
	return nil
}

// dropSource drops the shop's publication and slots on this pod (and its
// marks); wait: wait for a slot a subscriber still holds (it lets go once
// its subscription is disabled), else leave it.
func (s *Store) dropSource(ctx context.Context, shopID int64, wait bool) error {
	name := streamName(shopID)
	slot, err := s.slotName(ctx, shopID)
	if err != nil {
		return err
	}
	if err := s.dropSlots(ctx, slot, "", wait); err != nil {
		return err
	}
	if _, err := s.pool.Exec(ctx, "DROP PUBLICATION IF EXISTS "+pgx.Identifier{name}.Sanitize()); err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, statements.Tagged(route, "marks_delete"), shopID)
	return err
}

func (s *Store) dropSlots(ctx context.Context, name, syncPrefix string, wait bool) error {
	for {
		rows, err := s.pool.Query(ctx, statements.Tagged(route, "slots_list"), name, syncPrefix)
		if err != nil {
			return err
		}
		type slot struct {
			name   string
			active bool
		}
		slots, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (slot, error) {
			var sl slot
			return sl, r.Scan(&sl.name, &sl.active)
		})
		if err != nil {
			return err
		}
		busy := 0
		for _, sl := range slots {
			if sl.active {
				busy++
				continue
			}
			if _, err := s.pool.Exec(ctx, statements.Tagged(route, "slot_drop"), sl.name); err != nil && !isUndefinedObject(err) {
				// 55006: it became active meanwhile; the next round sees it.
				if !isObjectInUse(err) {
					return fmt.Errorf("pgmove: dropping slot %s: %w", sl.name, err)
				}
				busy++
			}
		}
		if busy == 0 || !wait {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pgmove: %d replication slots of %s still in use: %w", busy, name, context.Cause(ctx))
		case <-time.After(streamPoll):
		}
	}
}

// connInfo is how the target's server reaches this pod: as this pod's
// pool does.
func (s *Store) connInfo() string {
	c := s.pool.Config().ConnConfig
	kv := []string{"host", c.Host, "port", fmt.Sprint(c.Port), "dbname", c.Database, "user", c.User}
	if c.Password != "" {
		kv = append(kv, "password", c.Password)
	}
	if c.TLSConfig == nil {
		kv = append(kv, "sslmode", "disable")
	}
	var b strings.Builder
	for i := 0; i < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(' ')
		}
		v := strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(kv[i+1])
		fmt.Fprintf(&b, "%s='%s'", kv[i], v)
	}
	return b.String()
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func isUndefinedObject(err error) bool { return pgCode(err) == "42704" }

func isObjectInUse(err error) bool { return pgCode(err) == "55006" }

func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}
