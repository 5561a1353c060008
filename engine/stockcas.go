package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/holdfast/holdfast"
)

// StockImportIDMaxLen bounds StockImport.ID, in bytes: each entry is
// recorded as an identified stock change under "<ID>#<index>", which must
// fit holdfast.StockChangeIDMaxLen.
const StockImportIDMaxLen = holdfast.StockChangeIDMaxLen - 8

// ImportStock sets many keys' available stock of one shop in one
// transaction (see holdfast.StockImport): all or nothing, idempotent on
// im.ID, every entry with ExpectAvailable a compare-and-set checked under
// its key's lock. The keys are locked in the drivers' lock order (shop,
// item, location), whatever the entries' order, so two imports over the
// same keys never deadlock on each other.
//
// Each entry is recorded as an identified stock change with ID
// "<im.ID>#<index>" (its index in im.Entries): a retry of the same import
// finds every entry recorded and answers the first outcome; a retry that
// finds some recorded and some not is ErrIdempotencyConflict. Single
// changes should not use IDs of that shape.
func (c *Client[TTx]) ImportStock(ctx context.Context, im holdfast.StockImport) (*holdfast.StockImportResult, error) {
	var zero TTx
	r, err := c.importStock(ctx, zero, true, im)
	if err == nil && !r.Replayed {
		keys := make([]holdfast.Key, len(r.Levels))
		for i, l := range r.Levels {
			keys[i] = l.Key
		}
		c.endUnservableOn(ctx, holdfast.RouteAdjust, keys)
	}
	return r, err
}

// ImportStockTx is ImportStock inside the caller's transaction (in a
// savepoint): the import and its records commit with the caller's
// transaction.
func (c *Client[TTx]) ImportStockTx(ctx context.Context, tx TTx, im holdfast.StockImport) (*holdfast.StockImportResult, error) {
	if err := callerTx(tx); err != nil {
		return nil, err
	}
	return c.importStock(ctx, tx, false, im)
}

func (c *Client[TTx]) importStock(ctx context.Context, tx TTx, own bool, im holdfast.StockImport) (*holdfast.StockImportResult, error) {
	start := time.Now()
	if err := validateStockImport(im); err != nil {
		c.observe(holdfast.RouteAdjust, start, err, nil)
		return nil, err
	}
	items := make([]int64, len(im.Entries))
	for i, e := range im.Entries {
		items[i] = e.ItemID
	}
	if err := c.refuseBundleStock(ctx, tx, own, im.ShopID, items, func(i int) string { return fmt.Sprintf("entries[%d].item_id", i) }); err != nil {
		c.observe(holdfast.RouteAdjust, start, err, nil)
		return nil, err
	}
	order := make([]int, len(im.Entries))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		ea, eb := im.Entries[a], im.Entries[b]
		return cmp.Or(cmp.Compare(ea.ItemID, eb.ItemID), cmp.Compare(ea.LocationID, eb.LocationID))
	})
	var res *holdfast.StockImportResult
	err := c.run(ctx, tx, own, holdfast.RouteAdjust, true, func(tx TTx) error {
		res = &holdfast.StockImportResult{ID: im.ID, Levels: make([]holdfast.Level, len(im.Entries))}
		replayed := 0
		for _, i := range order {
			e := im.Entries[i]
			set := e.Available
			ch := holdfast.StockChange{
				Key: holdfast.Key{ShopID: im.ShopID, ItemID: e.ItemID, LocationID: e.LocationID},
				Set: &set, Reason: im.Reason, Reference: im.Reference,
				ID: importEntryID(im.ID, i), ExpectAvailable: e.ExpectAvailable,
			}
			l, err := c.d.ChangeStockAttempt(ctx, tx, own, ch)
			var changed *holdfast.StockChangedError
			if errors.As(err, &changed) {
				changed.Index = i
				return changed // rolls every entry back
			}
			if err != nil {
				return err
			}
			if l.Replayed {
				replayed++
			} else if err := c.audit(ctx, tx, ch.ShopID, stockAction(ch), stockDetail(ch, l)); err != nil {
				return err // each entry applied is a stock change the audit log records
			} else if _, l, err = c.convertKey(ctx, tx, own, ch.Key, l, true); err != nil {
				return err // stock that arrived serves owed pre-orders first (preorder.go)
			}
			l.Replayed = false
			res.Levels[i] = *l
		}
		if replayed > 0 && replayed < len(im.Entries) {
			return fmt.Errorf("%w: stock import id %q was used for other entries", holdfast.ErrIdempotencyConflict, im.ID)
		}
		res.Replayed = replayed > 0
		return nil
	})
	c.observe(holdfast.RouteAdjust, start, err, nil)
	if err != nil {
		return nil, err
	}
	return res, nil
}

func importEntryID(id string, i int) string { return id + "#" + strconv.Itoa(i) }

// validateStockImport checks an import against its bounds; fields are named
// as the HTTP API names them.
func validateStockImport(im holdfast.StockImport) error {
	switch {
	case im.ShopID <= 0:
		return holdfast.NewArgumentError("shop_id", "must be a positive integer")
	case im.ID == "":
		return holdfast.NewArgumentError("import_id", "required: an import is idempotent on its id")
	case len(im.ID) > StockImportIDMaxLen:
		return holdfast.NewArgumentError("import_id", "at most %d bytes", StockImportIDMaxLen)
	case !utf8.ValidString(im.ID) || strings.ContainsFunc(im.ID, unicode.IsControl):
		return holdfast.NewArgumentError("import_id", "must be UTF-8 text without control characters")
	case im.Reason == "":
		return holdfast.NewArgumentError("reason", "required")
	case len(im.Reason) > holdfast.ReasonMaxLen:
		return holdfast.NewArgumentError("reason", "at most %d bytes", holdfast.ReasonMaxLen)
	case len(im.Reference) > holdfast.ReasonMaxLen:
		return holdfast.NewArgumentError("reference", "at most %d bytes", holdfast.ReasonMaxLen)
	case len(im.Entries) == 0:
		return holdfast.NewArgumentError("entries", "required: at least one entry")
	case len(im.Entries) > holdfast.StockImportEntriesMax:
		return holdfast.NewArgumentError("entries", "at most %d entries in one import (got %d); split it", holdfast.StockImportEntriesMax, len(im.Entries))
	}
	seen := make(map[[2]int64]int, len(im.Entries))
	for i, e := range im.Entries {
		f := func(name string) string { return fmt.Sprintf("entries[%d].%s", i, name) }
		switch {
		case e.ItemID <= 0:
			return holdfast.NewArgumentError(f("item_id"), "must be a positive integer")
		case e.LocationID <= 0:
			return holdfast.NewArgumentError(f("location_id"), "must be a positive integer")
		case e.Available < 0 || e.Available > holdfast.AvailableMax:
			return holdfast.NewArgumentError(f("available"), "must be between 0 and %d", holdfast.AvailableMax)
		case e.ExpectAvailable != nil && (*e.ExpectAvailable < 0 || *e.ExpectAvailable > holdfast.AvailableMax):
			return holdfast.NewArgumentError(f("expected_available"), "must be between 0 and %d", holdfast.AvailableMax)
		}
		k := [2]int64{e.ItemID, e.LocationID}
		if j, dup := seen[k]; dup {
			return holdfast.NewArgumentError(fmt.Sprintf("entries[%d]", i), "the same item and location as entries[%d]; one key at most once", j)
		}
		seen[k] = i
	}
	return nil
}
