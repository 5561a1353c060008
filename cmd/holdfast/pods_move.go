package main

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/holdfast/holdfast/mysql/mymove"
	"github.com/holdfast/holdfast/pods"
	"github.com/holdfast/holdfast/postgres/pgmove"
	"github.com/holdfast/holdfast/postgres/podmap"
)

// podsMoveConns bounds each pod's pool of a move: the fence's connection,
// the copy's, the verify's.
const podsMoveConns = 4

// moveStores opens the control database's map and a move store on every
// pod of pf: package pgmove's on PostgreSQL pods, mymove's on MariaDB
// ones. A shop moves between pods of one engine (Copy refuses a target of
// the other).
func moveStores(ctx context.Context, pf *podsFile) (pods.Map, map[string]pods.MoveStore, func(), error) {
	cu, err := pf.Control.url("control")
	if err != nil {
		return nil, nil, nil, err
	}
	control, err := pgPool(ctx, cu, 2, "holdfast-pods-move")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("control database: %w", err)
	}
	stores, closeStores, err := podMoveStores(ctx, pf)
	if err != nil {
		control.Close()
		return nil, nil, nil, err
	}
	return podmap.New(control), stores, func() { closeStores(); control.Close() }, nil
}

// podMoveStores opens a move store on every pod of pf, each on a pool of
// its own of podsMoveConns (serve's moves too: a move's fence, copy and
// verify do not take the API's connections).
func podMoveStores(ctx context.Context, pf *podsFile) (map[string]pods.MoveStore, func(), error) {
	var pools []*pgxpool.Pool
	var dbs []*sql.DB
	closeAll := func() {
		for _, p := range pools {
			p.Close()
		}
		for _, d := range dbs {
			d.Close()
		}
	}
	stores := map[string]pods.MoveStore{}
	for _, p := range pf.Pods {
		u, err := p.url("pod " + p.Name)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		if p.Engine == engineMySQL {
			db, err := mariaDBPool(u, podsMoveConns)
			if err != nil {
				closeAll()
				return nil, nil, fmt.Errorf("pod %s: %w", p.Name, err)
			}
			dbs = append(dbs, db)
			stores[p.Name] = mymove.New(db)
			continue
		}
		pool, err := pgPool(ctx, u, podsMoveConns, "holdfast-pods-move-"+p.Name)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("pod %s: %w", p.Name, err)
		}
		pools = append(pools, pool)
		stores[p.Name] = pgmove.New(pool)
	}
	return stores, closeAll, nil
}

// podsMoveBeforeFence, when set (tests), holds serve's moves before their
// fence (pods.MoverConfig.BeforeFence).
var podsMoveBeforeFence func(ctx context.Context, shopID int64) error

// newPodsMover is serve's mover over pods: the admin routes' moves
// (httpapi.Pods), between pods of one engine, on move stores of their own.
func newPodsMover(ctx context.Context, pf *podsFile, router *pods.Router, log *slog.Logger) (*pods.Mover, func(), error) {
	stores, closeStores, err := podMoveStores(ctx, pf)
	if err != nil {
		return nil, nil, err
	}
	engineOf := map[string]string{}
	for _, p := range pf.Pods {
		engineOf[p.Name] = p.Engine
	}
	m, err := pods.NewMover(pods.MoverConfig{Router: router, Stores: stores, Logger: log, BeforeFence: podsMoveBeforeFence,
		Check: func(shop int64, from, to string) error {
			if engineOf[from] != engineOf[to] {
				return fmt.Errorf("%w: shop %d lives on pod %s (%s); pod %s is a %s pod: a shop moves between pods of one engine",
					pods.ErrMoveRefused, shop, from, engineOf[from], to, engineOf[to])
			}
			return nil
		}})
	if err != nil {
		closeStores()
		return nil, nil, err
	}
	return m, closeStores, nil
}

func newPodsMoveCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "move",
		Short: "move a shop to another pod (streamed ahead of a short fence, or copied under it; its writes wait or are refused retriably for the fence; docs/OPERATIONS.md)",
		Args:  noArgs,
	}
	fs := cmd.Flags()
	path := fs.String("pods-config", "", "the pods configuration file (as serve takes it)")
	shop := fs.Int64("shop", 0, "the shop to move")
	to := fs.String("to", "", "the target pod")
	method := fs.String("method", "auto", "stream (copy and stream the shop's changes while it trades, then a short fence: needs wal_level=logical on the source), copy (copy under the fence), or auto (stream when the pods can)")
	fenceWait := fs.Duration("fence-wait", pods.FenceWaitDefault, "longest wait for the shop's writes in flight when the fence goes up")
	purgeDelay := fs.Duration("purge-delay", pods.PurgeDelayDefault, "wait after the switch before deleting the shop's rows on the source (negative: keep them, fenced)")
	asJSON := fs.Bool("json", false, "print the move's report as JSON")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx := cmd.Context()
		if *shop <= 0 || *to == "" {
			return usageError("--shop (positive) and --to are required")
		}
		if *method == "auto" {
			*method = pods.MethodAuto
		} else if *method != pods.MethodStream && *method != pods.MethodCopy {
			return usageError("--method %q: want stream, copy or auto", *method)
		}
		pf, _, err := loadPodsFile(*path)
		if err != nil {
			return err
		}
		engineOf := map[string]string{}
		for _, p := range pf.Pods {
			engineOf[p.Name] = p.Engine
		}
		m, stores, closeAll, err := moveStores(ctx, pf)
		if err != nil {
			return err
		}
		defer closeAll()
		if pl, err := m.Lookup(ctx, *shop); err == nil && stores[pl.Pod] == nil {
			return usageError("shop %d lives on pod %s, which is not a pod of this file", *shop, pl.Pod)
		} else if err == nil && engineOf[pl.Pod] != engineOf[*to] {
			return usageError("shop %d lives on pod %s (%s); --to %s is a %s pod: a shop moves between pods of one engine", *shop, pl.Pod, engineOf[pl.Pod], *to, engineOf[*to])
		}
		rep, err := pods.Move(ctx, pods.MoveParams{ShopID: *shop, To: *to, Map: m, Stores: stores, Method: *method, FenceWait: *fenceWait, PurgeDelay: *purgeDelay})
		if rep != nil {
			out := cmd.OutOrStdout()
			if *asJSON {
				if werr := writeIndented(out, rep); werr != nil {
					return werr
				}
			} else {
				step := "copy"
				if rep.Method == pods.MethodStream {
					fmt.Fprintf(out, "streamed shop %d to %s while it traded: %d ms\n", rep.ShopID, rep.To, rep.Stream.Milliseconds())
					step = "catch-up"
				}
				fmt.Fprintf(out, "moved shop %d from %s to %s (epoch %d, %s): %d rows, fence %d ms (wait %d, %s %d, verify %d, switch %d), purged %d\n",
					rep.ShopID, rep.From, rep.To, rep.Epoch, rep.Method, rep.Rows, rep.Fence.Milliseconds(), rep.FenceWait.Milliseconds(),
					step, rep.Copy.Milliseconds(), rep.Verify.Milliseconds(), rep.Switch.Milliseconds(), rep.Purged)
			}
		}
		return err
	}
	return cmd
}

func newPodsAbortCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "abort",
		Short: "resolve a shop move that stopped, from the map: the shop served where the map places it, copies elsewhere deleted",
		Args:  noArgs,
	}
	fs := cmd.Flags()
	path := fs.String("pods-config", "", "the pods configuration file (as serve takes it)")
	shop := fs.Int64("shop", 0, "the shop")
	asJSON := fs.Bool("json", false, "print JSON")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx := cmd.Context()
		if *shop <= 0 {
			return usageError("--shop (positive) is required")
		}
		pf, _, err := loadPodsFile(*path)
		if err != nil {
			return err
		}
		m, stores, closeAll, err := moveStores(ctx, pf)
		if err != nil {
			return err
		}
		defer closeAll()
		actx, cancel := context.WithTimeout(ctx, pods.MoveStepTimeout)
		defer cancel()
		start := time.Now()
		rep, err := pods.Abort(actx, m, stores, *shop)
		if err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		if *asJSON {
			return writeIndented(out, rep)
		}
		fmt.Fprintf(out, "shop %d is served by pod %s; copies deleted on %v, unmarked there: %v (gone) %v (incoming), %d moved rows purged, in %d ms\n",
			rep.ShopID, rep.Pod, rep.Discarded, rep.Restored, rep.Accepted, rep.Purged, time.Since(start).Milliseconds())
		return nil
	}
	return cmd
}
