package faulttest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/holdfast/holdfast"
)

// Op names an operation in a history.
type Op string

// Operations the model knows. OpSet is the initial stocking of a key;
// OpSweep is a sweep run while nothing else ran (it expires every hold past
// its expiry, on every key).
const (
	OpSet     Op = "set"
	OpReserve Op = "reserve"
	OpClaim   Op = "claim"
	OpRelease Op = "release"
	OpExtend  Op = "extend"
	OpAdjust  Op = "adjust"
	OpLevel   Op = "level"
	OpSweep   Op = "sweep"
)

// Results of an operation, from its error (see Classify).
const (
	ResOK            = "ok"
	ResInsufficient  = "insufficient"
	ResNotFound      = "notfound"
	ResClaimed       = "claimed"
	ResReleased      = "released"
	ResExpired       = "expired"
	ResLifetime      = "lifetime"
	ResOverCommitted = "overcommitted"
	ResInvalid       = "invalid"
	ResConflict      = "conflict"
	ResUnknown       = "unknown" // the outcome was not learnt: it may or may not have happened
	ResUntyped       = "untyped" // an error that is none of holdfast's typed errors: a defect
)

// Classify maps an operation's error to a result.
func Classify(err error) string {
	switch {
	case err == nil:
		return ResOK
	case errors.Is(err, holdfast.ErrInsufficientStock):
		return ResInsufficient
	case errors.Is(err, holdfast.ErrNotFound):
		return ResNotFound
	case errors.Is(err, holdfast.ErrHoldClaimed):
		return ResClaimed
	case errors.Is(err, holdfast.ErrHoldReleased):
		return ResReleased
	case errors.Is(err, holdfast.ErrHoldExpired):
		return ResExpired
	case errors.Is(err, holdfast.ErrLifetimeExceeded):
		return ResLifetime
	case errors.Is(err, holdfast.ErrOverCommitted):
		return ResOverCommitted
	case errors.Is(err, holdfast.ErrInvalidArgument):
		return ResInvalid
	case errors.Is(err, holdfast.ErrIdempotencyConflict):
		return ResConflict
	case errors.Is(err, holdfast.ErrUnavailable), errors.Is(err, holdfast.ErrOutcomeUnknown),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return ResUnknown
	}
	return ResUntyped
}

// Input is an operation on one key (Key is its index in the Env; -1 for a
// sweep, which touches every key). Times are microseconds of the injected
// clock.
type Input struct {
	Op    Op
	Key   int
	CO    int   // checkout number within the history
	Qty   int   // reserve quantity
	Delta int   // adjust delta; set: the level
	Now   int64 // the clock when the operation ran (constant within an epoch)
	TTL   int64 // reserve and extend
	Life  int64 // reserve: HoldLifetimeMax
}

// Output is what the client was told.
type Output struct {
	Result    string
	Status    holdfast.Status // claim and release: the returned hold's status
	Exp       int64           // reserve and extend: the returned expiry
	Available int             // adjust and level
	Held      int             // adjust and level
	// Late: a reserve or extend answered that the checkout had ended
	// (claimed, released, expired). The engine retries a call whose COMMIT
	// answer was lost; when the first attempt did commit and the hold was
	// ended before the retry, the retry reports the ending although this
	// call created (or extended) the hold. Such an answer may have taken
	// effect at any time after the call.
	Late bool
	// Replayed: a reserve answered with an existing hold. When the model
	// has no hold yet, this call created it (its first attempt committed,
	// the answer was lost, the engine's retry found the hold) and the
	// expiry answered is the hold's as the retry read it, after any
	// extension in between.
	Replayed bool
}

type mhold struct {
	qty           int
	status        holdfast.Status
	exp, deadline int64
}

// keyModel is the model's state of one key: its available stock and every
// checkout's hold. States are never mutated: each step copies.
type keyModel struct {
	avail int // -1 until the key is stocked
	holds map[int]mhold
}

func (s keyModel) heldSum() int {
	n := 0
	for _, h := range s.holds {
		if h.status == holdfast.StatusHeld {
			n += h.qty
		}
	}
	return n
}

func (s keyModel) sellable() int { return max(0, s.avail-s.heldSum()) }

func (s keyModel) with(co int, h mhold) keyModel {
	n := keyModel{avail: s.avail, holds: maps.Clone(s.holds)}
	if n.holds == nil {
		n.holds = map[int]mhold{}
	}
	n.holds[co] = h
	return n
}

func (s keyModel) withAvail(a int) keyModel {
	return keyModel{avail: a, holds: s.holds}
}

// apply is an operation's successful effect, for operations whose outcome is
// unknown; ok is false when it cannot succeed from s.
func apply(s keyModel, in Input) (keyModel, bool) {
	h, exists := s.holds[in.CO]
	switch in.Op {
	case OpSet:
		return s.withAvail(in.Delta), true
	case OpReserve:
		if !exists && s.sellable() >= in.Qty {
			return s.with(in.CO, mhold{qty: in.Qty, status: holdfast.StatusHeld, exp: in.Now + in.TTL, deadline: in.Now + in.Life}), true
		}
	case OpClaim:
		if exists && h.status == holdfast.StatusHeld && s.avail >= h.qty {
			h.status = holdfast.StatusClaimed
			return s.with(in.CO, h).withAvail(s.avail - h.qty), true
		}
		if exists && h.status == holdfast.StatusExpired && s.sellable() >= h.qty {
			h.status = holdfast.StatusClaimed
			return s.with(in.CO, h).withAvail(s.avail - h.qty), true
		}
	case OpRelease:
		if exists && h.status == holdfast.StatusHeld {
			h.status = releasedAs(h, in)
			return s.with(in.CO, h), true
		}
	case OpExtend:
		if exists && h.status == holdfast.StatusHeld && in.Now+in.TTL <= h.deadline {
			h.exp = in.Now + in.TTL
			return s.with(in.CO, h), true
		}
	case OpAdjust:
		if s.avail+in.Delta >= 0 {
			return s.withAvail(s.avail + in.Delta), true
		}
	case OpSweep:
		n := keyModel{avail: s.avail, holds: maps.Clone(s.holds)}
		for co, h := range n.holds {
			if h.status == holdfast.StatusHeld && h.exp < in.Now {
				h.status = holdfast.StatusExpired
				n.holds[co] = h
			}
		}
		return n, true
	}
	return s, false
}

// releasedAs is the status a release leaves a held hold in: released, or
// expired when the hold is past its expiry (valid up to and including its
// expiry instant) and not swept yet — the release ends it as the sweeper
// would have.
func releasedAs(h mhold, in Input) holdfast.Status {
	if in.Now > h.exp {
		return holdfast.StatusExpired
	}
	return holdfast.StatusReleased
}

// step returns the states the key can be in after in returned out, none if
// out is impossible from s.
func step(s keyModel, in Input, out Output) []keyModel {
	if out.Result == ResUnknown || out.Result == ResUntyped {
		if n, ok := apply(s, in); ok {
			return []keyModel{s, n}
		}
		return []keyModel{s}
	}
	if in.Op != OpSet && s.avail < 0 {
		return nil
	}
	h, exists := s.holds[in.CO]
	ended := func() string {
		switch h.status {
		case holdfast.StatusClaimed:
			return ResClaimed
		case holdfast.StatusReleased:
			return ResReleased
		case holdfast.StatusExpired:
			return ResExpired
		}
		return ""
	}
	yes := func(n keyModel) []keyModel { return []keyModel{n} }
	switch in.Op {
	case OpSet, OpSweep:
		if out.Result == ResOK {
			n, _ := apply(s, in)
			return yes(n)
		}
	case OpLevel:
		if out.Result == ResOK && out.Available == s.avail && out.Held == s.heldSum() {
			return yes(s)
		}
	case OpAdjust:
		if s.avail+in.Delta < 0 {
			if out.Result == ResInvalid {
				return yes(s)
			}
			return nil
		}
		// Available is exact (the level row is locked until commit); held
		// is read by a statement before the commit, while reservations
		// that do not take the key's lock may commit: not checked.
		if out.Result == ResOK && out.Available == s.avail+in.Delta {
			return yes(s.withAvail(s.avail + in.Delta))
		}
	case OpReserve:
		switch {
		case out.Result == ResInsufficient && (!exists):
			// Sold out, or units in flight to other reservers: allowed
			// whatever the model's sellable stock (a liveness question,
			// not a safety one).
			return yes(s)
		case !exists && out.Late:
			if n, ok := apply(s, in); ok {
				return yes(n)
			}
		case !exists && out.Result == ResOK && out.Replayed:
			if n, ok := apply(s, in); ok {
				return yes(n)
			}
		case !exists:
			if out.Result == ResOK && out.Exp == in.Now+in.TTL {
				if n, ok := apply(s, in); ok {
					return yes(n)
				}
			}
		case h.status == holdfast.StatusHeld:
			if out.Result == ResOK && out.Exp == h.exp && in.Qty == h.qty {
				return yes(s)
			}
		default:
			if out.Result == ended() {
				return yes(s)
			}
		}
	case OpClaim:
		switch {
		case !exists:
			if out.Result == ResNotFound {
				return yes(s)
			}
		case h.status == holdfast.StatusHeld:
			if s.avail < h.qty {
				if out.Result == ResOverCommitted {
					return yes(s)
				}
				return nil
			}
			if out.Result == ResOK && out.Status == holdfast.StatusClaimed {
				n, _ := apply(s, in)
				return yes(n)
			}
		case h.status == holdfast.StatusClaimed:
			if out.Result == ResOK && out.Status == holdfast.StatusClaimed {
				return yes(s)
			}
		case h.status == holdfast.StatusReleased:
			if out.Result == ResReleased {
				return yes(s)
			}
		case h.status == holdfast.StatusExpired:
			if out.Result == ResExpired {
				return yes(s) // not re-acquirable (or in flight elsewhere)
			}
			if out.Result == ResOK && out.Status == holdfast.StatusClaimed {
				if n, ok := apply(s, in); ok {
					return yes(n)
				}
			}
		}
	case OpRelease:
		switch {
		case !exists:
			if out.Result == ResNotFound {
				return yes(s)
			}
		case h.status == holdfast.StatusHeld:
			if out.Result == ResOK && out.Status == releasedAs(h, in) {
				n, _ := apply(s, in)
				return yes(n)
			}
		case h.status == holdfast.StatusClaimed:
			if out.Result == ResClaimed {
				return yes(s)
			}
		default:
			if out.Result == ResOK && out.Status == h.status {
				return yes(s)
			}
		}
	case OpExtend:
		if out.Late && exists {
			// Its first attempt may have extended the hold before the
			// hold ended (answer lost, retried): either effect.
			var next []keyModel
			if out.Result == ended() {
				next = append(next, s)
			}
			if n, ok := apply(s, in); ok {
				next = append(next, n)
			}
			return next
		}
		switch {
		case !exists:
			if out.Result == ResNotFound {
				return yes(s)
			}
		case h.status == holdfast.StatusHeld:
			if in.Now+in.TTL > h.deadline {
				if out.Result == ResLifetime {
					return yes(s)
				}
				return nil
			}
			if out.Result == ResOK && out.Exp == in.Now+in.TTL {
				n, _ := apply(s, in)
				return yes(n)
			}
		default:
			if out.Result == ended() {
				return yes(s)
			}
		}
	}
	return nil
}

func equalStates(a, b keyModel) bool {
	return a.avail == b.avail && maps.Equal(a.holds, b.holds)
}

func describeState(s keyModel) string {
	var b strings.Builder
	fmt.Fprintf(&b, "available %d, held %d:", s.avail, s.heldSum())
	for _, co := range slices.Sorted(maps.Keys(s.holds)) {
		h := s.holds[co]
		fmt.Fprintf(&b, " co%d=%d/%s", co, h.qty, h.status)
	}
	return b.String()
}

// Model is the porcupine model of inventory keys: partitioned by key, each
// partition a nondeterministic model of one key (an operation whose outcome
// is unknown may or may not have happened). It is strict about safety: a
// reservation that succeeds beyond sellable stock, a claim beyond
// available, a second hold for one checkout, a hold that ends without a
// claim, release or sweep, or a level that disagrees with the ledger is
// illegal. It is lenient about liveness: "insufficient stock" is always
// allowed.
var Model = porcupine.NondeterministicModel{
	Partition: partition,
	Init:      func() []any { return []any{keyModel{avail: -1}} },
	Step: func(state, input, output any) []any {
		next := step(state.(keyModel), input.(Input), output.(Output))
		out := make([]any, len(next))
		for i, n := range next {
			out[i] = n
		}
		return out
	},
	Equal:         func(a, b any) bool { return equalStates(a.(keyModel), b.(keyModel)) },
	DescribeState: func(s any) string { return describeState(s.(keyModel)) },
	DescribeOperation: func(input, output any) string {
		in, out := input.(Input), output.(Output)
		switch in.Op {
		case OpAdjust, OpSet:
			return fmt.Sprintf("%s(%d) -> %s avail=%d held=%d", in.Op, in.Delta, out.Result, out.Available, out.Held)
		case OpLevel:
			return fmt.Sprintf("level -> avail=%d held=%d", out.Available, out.Held)
		case OpSweep:
			return fmt.Sprintf("sweep(now=%d)", in.Now)
		}
		return fmt.Sprintf("%s(co%d q=%d) -> %s %s exp=%d", in.Op, in.CO, in.Qty, out.Result, out.Status, out.Exp)
	},
}

func partition(ops []porcupine.Operation) [][]porcupine.Operation {
	byKey := map[int][]porcupine.Operation{}
	var sweeps []porcupine.Operation
	for _, op := range ops {
		in := op.Input.(Input)
		if in.Key < 0 {
			sweeps = append(sweeps, op)
			continue
		}
		byKey[in.Key] = append(byKey[in.Key], op)
	}
	var out [][]porcupine.Operation
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		part := byKey[k]
		for _, sw := range sweeps {
			in := sw.Input.(Input)
			in.Key = k
			sw.Input = in
			part = append(part, sw)
		}
		out = append(out, part)
	}
	return out
}

// History records operations with their call and return times. Safe for
// concurrent use.
type History struct {
	mu    sync.Mutex
	start time.Time
	ops   []porcupine.Operation
}

// NewHistory starts an empty history.
func NewHistory() *History { return &History{start: time.Now()} }

// Now is a timestamp for Call and Return.
func (h *History) Now() int64 { return int64(time.Since(h.start)) }

// Add records an operation. Its return time is ignored when its outcome is
// unknown: such an operation may take effect at any time after its call.
func (h *History) Add(client int, in Input, call int64, out Output) {
	ret := h.Now()
	if out.Result == ResUnknown || out.Result == ResUntyped || out.Late {
		ret = math.MaxInt64
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
}

// Len is the number of operations recorded.
func (h *History) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.ops)
}

// Check checks the history for linearizability against Model. On a
// violation it writes porcupine's visualization to a file and names it in
// the error.
func (h *History) Check(timeout time.Duration) (porcupine.CheckResult, error) {
	h.mu.Lock()
	ops := slices.Clone(h.ops)
	h.mu.Unlock()
	end := int64(0)
	for _, op := range ops {
		if op.Return != math.MaxInt64 {
			end = max(end, op.Return)
		}
		end = max(end, op.Call)
	}
	for i := range ops {
		if ops[i].Return == math.MaxInt64 {
			ops[i].Return = end + 1 + int64(i)
		}
	}
	m := Model.ToModel()
	res, info := porcupine.CheckOperationsVerbose(m, ops, timeout)
	if res == porcupine.Illegal {
		path := filepath.Join(os.TempDir(), fmt.Sprintf("holdfast-history-%d.html", time.Now().UnixNano()))
		if err := porcupine.VisualizePath(m, info, path); err != nil {
			return res, fmt.Errorf("history is not linearizable (visualization failed: %v)", err)
		}
		dump := strings.TrimSuffix(path, ".html") + ".txt"
		var b strings.Builder
		single := m
		single.Partition = nil
		for pi, part := range partition(ops) {
			if porcupine.CheckOperations(single, part) {
				continue
			}
			fmt.Fprintf(&b, "partition %d is not linearizable\n", pi)
			slices.SortStableFunc(part, func(a, b porcupine.Operation) int { return cmpInt64(a.Call, b.Call) })
			for _, op := range part {
				fmt.Fprintf(&b, "p%d c%d %d..%d %s\n", pi, op.ClientId, op.Call, op.Return, Model.DescribeOperation(op.Input, op.Output))
			}
		}
		_ = os.WriteFile(dump, []byte(b.String()), 0o644)
		if raw, err := json.Marshal(ops); err == nil {
			_ = os.WriteFile(strings.TrimSuffix(path, ".html")+".json", raw, 0o644)
		}
		return res, fmt.Errorf("history is not linearizable: see %s and %s\n%s", path, dump, explain(info, partition(ops)))
	}
	return res, nil
}

// Replay steps the model through the history in call order, as if it were
// sequential, and describes the first operation the model rejects ("" if
// none). For a concurrent history a rejection is only a hint; for a
// sequential one (one worker) it is the violation.
func (h *History) Replay() string {
	h.mu.Lock()
	ops := slices.Clone(h.ops)
	h.mu.Unlock()
	slices.SortStableFunc(ops, func(a, b porcupine.Operation) int {
		if a.Call < b.Call {
			return -1
		}
		if a.Call > b.Call {
			return 1
		}
		return 0
	})
	for _, part := range partition(ops) {
		slices.SortStableFunc(part, func(a, b porcupine.Operation) int {
			if a.Call < b.Call {
				return -1
			}
			if a.Call > b.Call {
				return 1
			}
			return 0
		})
		states := []keyModel{{avail: -1}}
		for i, op := range part {
			var next []keyModel
			for _, s := range states {
				next = append(next, step(s, op.Input.(Input), op.Output.(Output))...)
			}
			if len(next) == 0 {
				return fmt.Sprintf("key %d op %d: %s from %s", op.Input.(Input).Key, i,
					Model.DescribeOperation(op.Input, op.Output), describeState(states[0]))
			}
			states = next
		}
	}
	return ""
}

// explain describes, for each partition that could not be linearized, the
// end of its longest partial linearization and the pending operation that
// returned first: where a reader starts looking.
func explain(info porcupine.LinearizationInfo, parts [][]porcupine.Operation) string {
	var b strings.Builder
	for pi, part := range info.PartialLinearizationsOperations() {
		var longest []porcupine.Operation
		for _, l := range part {
			if len(l) > len(longest) {
				longest = l
			}
		}
		states := []keyModel{{avail: -1}}
		done := map[porcupine.Operation]bool{}
		var lines []string
		for _, op := range longest {
			var next []keyModel
			for _, s := range states {
				next = append(next, step(s, op.Input.(Input), op.Output.(Output))...)
			}
			states = next
			lines = append(lines, fmt.Sprintf("    [c%d %d..%d] %s", op.ClientId, op.Call, op.Return, Model.DescribeOperation(op.Input, op.Output)))
		}
		if len(lines) > 8 {
			lines = lines[len(lines)-8:]
		}
		for _, op := range longest {
			done[op] = true
		}
		var pending []porcupine.Operation
		if pi < len(parts) {
			for _, op := range parts[pi] {
				if !done[op] {
					pending = append(pending, op)
				}
			}
		}
		slices.SortFunc(pending, func(a, b porcupine.Operation) int { return int((a.Call - b.Call) >> 32) })
		for i, op := range pending {
			if i == 6 {
				break
			}
			lines = append(lines, fmt.Sprintf("  pending [c%d %d..%d] %s", op.ClientId, op.Call, op.Return, Model.DescribeOperation(op.Input, op.Output)))
		}
		fmt.Fprintf(&b, "partition %d: longest partial linearization %d ops, ending:\n%s\n", pi, len(longest), strings.Join(lines, "\n"))
		for _, s := range states {
			fmt.Fprintf(&b, "    state: %s\n", describeState(s))
		}
	}
	return b.String()
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// LoadOperations reads a history written next to a failed check's
// visualization (the .json file), for offline minimization.
func LoadOperations(path string) ([]porcupine.Operation, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var ops []struct {
		ClientId int
		Input    Input
		Call     int64
		Output   Output
		Return   int64
	}
	if err := json.Unmarshal(raw, &ops); err != nil {
		return nil, err
	}
	out := make([]porcupine.Operation, len(ops))
	for i, o := range ops {
		out[i] = porcupine.Operation{ClientId: o.ClientId, Input: o.Input, Call: o.Call, Output: o.Output, Return: o.Return}
	}
	return out, nil
}

// Minimize returns a smallest-found subset of a non-linearizable partition
// (greedily dropping operations while it stays non-linearizable), in call
// order, described one operation a line.
func Minimize(ops []porcupine.Operation) string {
	m := Model.ToModel()
	m.Partition = nil
	var bad []porcupine.Operation
	for _, part := range partition(ops) {
		if !porcupine.CheckOperations(m, part) {
			bad = part
			break
		}
	}
	if bad == nil {
		return "linearizable"
	}
	slices.SortStableFunc(bad, func(a, b porcupine.Operation) int { return cmpInt64(a.Call, b.Call) })
	for i := len(bad) - 1; i >= 0; i-- {
		if bad[i].Input.(Input).Op == OpSet {
			continue
		}
		try := slices.Delete(slices.Clone(bad), i, i+1)
		if !porcupine.CheckOperations(m, try) {
			bad = try
		}
	}
	var b strings.Builder
	for _, op := range bad {
		in := op.Input.(Input)
		fmt.Fprintf(&b, "c%d %d..%d now=%d ttl=%d %s\n", op.ClientId, op.Call, op.Return, in.Now, in.TTL, Model.DescribeOperation(op.Input, op.Output))
	}
	return b.String()
}

// Explain checks ops (as LoadOperations reads them) and describes where
// linearization fails ("" when it does not).
func Explain(ops []porcupine.Operation) string {
	m := Model.ToModel()
	res, info := porcupine.CheckOperationsVerbose(m, ops, time.Minute)
	if res != porcupine.Illegal {
		return string(res)
	}
	return explain(info, partition(ops))
}
