package faulttest

import (
	"slices"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/internal/history"
)

// Recording calls in the history, and whether a call's answers are judged
// strictly (its keys' strategies did not change under it).

// strictness is a snapshot of a cart's keys' strategies, to decide whether
// "insufficient stock" and "hold expired" answers are checked strictly
// (Input.Strict).
type strictness struct {
	gens    []int
	lenient bool
}

func micros(t time.Time) int64 { return t.UnixMicro() }

// cart fills in's cart from lines (keys of the Env); ok is false when the
// history cannot model it (a key not in the Env, too many lines).
func (e *Env) cart(in *history.Input, shop int64, lines []holdfast.Line) bool {
	if len(lines) == 0 || len(lines) > history.CartLinesMax {
		return false
	}
	for i, l := range lines {
		k := e.keyIndex(holdfast.Key{ShopID: shop, ItemID: l.ItemID, LocationID: l.LocationID})
		if k < 0 {
			return false
		}
		in.Cart[i] = history.CartLine{Key: k, Qty: l.Quantity}
	}
	in.NCart = len(lines)
	in.Key, in.Qty = in.Cart[0].Key, in.Cart[0].Qty
	return true
}

// strict snapshots the strategies of a cart's keys at a call's start.
func (e *Env) strict(shop int64, lines []holdfast.Line) strictness {
	e.mu.Lock()
	defer e.mu.Unlock()
	var st strictness
	for _, l := range lines {
		k := holdfast.Key{ShopID: shop, ItemID: l.ItemID, LocationID: l.LocationID}
		for _, ki := range e.Keys {
			if ki.Key != k {
				continue
			}
			st.gens = append(st.gens, ki.gen)
			st.lenient = st.lenient || ki.Strategy == holdfast.StrategyPool || ki.changing > 0 || ki.uncertain
		}
	}
	return st
}

// lenient reports whether a call that started at st must be judged
// leniently: a pool key, or a strategy change overlapped the call.
func (e *Env) lenient(st strictness, shop int64, lines []holdfast.Line) bool {
	now := e.strict(shop, lines)
	return st.lenient || now.lenient || !slices.Equal(st.gens, now.gens)
}

// recordCart records an operation on a checkout whose cart has lines.
func (e *Env) recordCart(client int, in history.Input, shop int64, lines []holdfast.Line, call int64, out history.Output) {
	if e.Hist == nil || !e.cart(&in, shop, lines) {
		return
	}
	e.Hist.Add(client, in, call, out)
}

func (e *Env) record(client, key int, in history.Input, call int64, out history.Output) {
	if e.Hist == nil || key < 0 {
		return
	}
	in.Key = key
	e.Hist.Add(client, in, call, out)
}

func (e *Env) call() int64 {
	if e.Hist == nil {
		return 0
	}
	return e.Hist.Now()
}

func (e *Env) untyped(op string, err error) {
	if history.Classify(err) == history.ResUntyped {
		e.Violation("%s returned an untyped error: %v", op, err)
	}
}
