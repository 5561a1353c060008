package pods_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/holdfast/holdfast/pods"
)

// TestMoveResult: how a move ended, the result label of
// holdfast_pods_moves_finished_total: a switched move is moved even when a
// later step failed, unless the switch is unresolved; a cancelled one is
// told from a failed one.
func TestMoveResult(t *testing.T) {
	t.Parallel()
	live := context.Background()
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	rep := &pods.MoveReport{ShopID: 1}
	for _, c := range []struct {
		ctx  context.Context
		rep  *pods.MoveReport
		err  error
		want string
	}{
		{live, rep, nil, pods.MoveResultMoved},
		{live, rep, errors.New("purging: connection lost"), pods.MoveResultMoved},
		{live, rep, fmt.Errorf("%w: not accepted", pods.ErrMoveUnresolved), pods.MoveResultUnresolved},
		{live, nil, fmt.Errorf("%w: switch", pods.ErrMoveUnresolved), pods.MoveResultUnresolved},
		{live, nil, fmt.Errorf("%w: on pod b already", pods.ErrMoveRefused), pods.MoveResultRefused},
		{live, nil, fmt.Errorf("%w: table holds", pods.ErrMoveMismatch), pods.MoveResultMismatch},
		{gone, nil, errors.New("before the fence: context canceled"), pods.MoveResultCancelled},
		{live, nil, fmt.Errorf("fencing: %w", context.Canceled), pods.MoveResultCancelled},
		{live, nil, errors.New("fencing: lock timeout"), pods.MoveResultFailed},
	} {
		if got := pods.MoveResult(c.ctx, c.rep, c.err); got != c.want {
			t.Errorf("MoveResult(ctx err %v, report %v, %v) = %s, want %s", c.ctx.Err(), c.rep != nil, c.err, got, c.want)
		}
	}
}

// TestMoveCollectors: the move metrics register (on more than one
// registry: a process may run several servers) and show every result
// and step at zero before any move.
func TestMoveCollectors(t *testing.T) {
	t.Parallel()
	for range 2 {
		reg := prometheus.NewRegistry()
		reg.MustRegister(pods.MoveCollectors()...)
		n, err := testutil.GatherAndCount(reg, "holdfast_pods_moves_finished_total", "holdfast_pods_move_step_seconds",
			"holdfast_pods_moves_started_total", "holdfast_pods_moves_in_progress", "holdfast_pods_move_fence_seconds")
		if err != nil {
			t.Fatal(err)
		}
		if want := len(pods.MoveResults) + len(pods.MoveSteps) + 3; n != want {
			t.Fatalf("%d series, want %d", n, want)
		}
		mfs, _ := reg.Gather()
		var names []string
		for _, mf := range mfs {
			names = append(names, mf.GetName())
		}
		if !strings.Contains(strings.Join(names, " "), "holdfast_pods_move_fence_seconds") {
			t.Fatalf("no fence histogram in %v", names)
		}
	}
}
