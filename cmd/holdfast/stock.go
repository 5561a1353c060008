package main

import (
	"encoding/json"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/wire"
)

func init() { register(newStockCmd) }

// newStockCmd is `holdfast stock set` and `holdfast stock import`: a key's
// stock (optionally compare-and-set), and many keys' in one transaction, as
// PUT …/inventory/{item}/{location} and PUT …/inventory set them over HTTP.
func newStockCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "stock",
		Short: "set keys' available stock (a stocktake, a sync), optionally compare-and-set",
		Args:  noArgs,
	}
	const where = `

It runs on the database behind DATABASE_URL, or the embedded one in
--data-dir (with --engine mariadb: the private MariaDB of the serve running
there), and needs its schema current (it never migrates).`
	set := &cobra.Command{
		Use:   "set --shop N --item N --location N --available N --reason R [--expect N] [--id ID]",
		Short: "set a key's available stock; prints the key's stock",
		Long: `Set a key's available stock, as PUT /v1/shops/{shop}/inventory/{item}/{location}
does. With --expect N it is a compare-and-set: applied only if the key's
available stock is N under its lock (a key never stocked counts as 0);
otherwise nothing changes and the command fails with stock_changed and the
current value. With --id a retry answers the first outcome.` + where,
		Args: noArgs,
	}
	var k holdfast.Key
	var available, expect int
	var reason, reference, id string
	fs := set.Flags()
	dataDir := dataDirFlag(fs)
	engine := engineFlag(fs)
	fs.Int64Var(&k.ShopID, "shop", 0, "the shop (required)")
	fs.Int64Var(&k.ItemID, "item", 0, "the item (required)")
	fs.Int64Var(&k.LocationID, "location", 0, "the location (required)")
	fs.IntVar(&available, "available", -1, "the new available stock (required)")
	fs.IntVar(&expect, "expect", -1, "compare-and-set: the available stock the change expects to replace")
	fs.StringVar(&reason, "reason", "", "the reason, for the ledger (required)")
	fs.StringVar(&reference, "reference", "", "a reference, for the ledger")
	fs.StringVar(&id, "id", "", "makes the change idempotent: a retry with the same id answers the first outcome")
	set.RunE = func(cmd *cobra.Command, _ []string) error {
		if k.ShopID <= 0 || k.ItemID <= 0 || k.LocationID <= 0 {
			return usageError("--shop, --item and --location are required and positive")
		}
		if available < 0 {
			return usageError("--available is required (0 or more)")
		}
		ch := holdfast.StockChange{Key: k, Set: &available, Reason: reason, Reference: reference, ID: id}
		if cmd.Flags().Changed("expect") {
			ch.ExpectAvailable = &expect
		}
		return withEngine(cmd.Context(), *engine, *dataDir, func(e holdfast.Engine) error {
			l, err := e.ChangeStock(cmd.Context(), ch)
			if err != nil {
				return argUsage(err, map[string]string{"available": "available", "expected_available": "expect", "reason": "reason", "reference": "reference", "id": "id"})
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(wire.FromLevel(l))
		})
	}
	imp := &cobra.Command{
		Use:   "import --shop N --file F",
		Short: "set many keys' stock in one transaction, all or nothing; prints their levels",
		Long: `Set many keys' available stock of one shop in one transaction, as
PUT /v1/shops/{shop}/inventory does: --file holds its JSON body,
{"import_id": "...", "reason": "...", "entries": [{"item_id": 42,
"location_id": 1, "available": 8, "expected_available": 5}, ...]} (at most
500 entries). An entry's expected_available that does not match refuses
the whole import; a retry with the same import_id answers the first
outcome.` + where,
		Args: noArgs,
	}
	var shop int64
	var file string
	ifs := imp.Flags()
	iDataDir := dataDirFlag(ifs)
	iEngine := engineFlag(ifs)
	ifs.Int64Var(&shop, "shop", 0, "the shop (required)")
	ifs.StringVar(&file, "file", "", "the import's JSON body (required; - reads standard input)")
	imp.RunE = func(cmd *cobra.Command, _ []string) error {
		if shop <= 0 || file == "" {
			return usageError("--shop and --file are required")
		}
		in := cmd.InOrStdin()
		if file != "-" {
			f, err := os.Open(file)
			if err != nil {
				return err
			}
			defer f.Close()
			in = f
		}
		raw, err := io.ReadAll(io.LimitReader(in, stockImportFileMax))
		if err != nil {
			return err
		}
		var body wire.StockImport
		if err := json.Unmarshal(raw, &body); err != nil {
			return usageError("--file: %v", err)
		}
		im := holdfast.StockImport{ShopID: shop, ID: body.ImportID, Reason: body.Reason, Reference: body.Reference, Entries: make([]holdfast.StockImportEntry, len(body.Entries))}
		for i, e := range body.Entries {
			im.Entries[i] = holdfast.StockImportEntry{ItemID: e.ItemID, LocationID: e.LocationID, Available: e.Available, ExpectAvailable: e.ExpectedAvailable}
		}
		return withEngine(cmd.Context(), *iEngine, *iDataDir, func(e holdfast.Engine) error {
			r, err := e.ImportStock(cmd.Context(), im)
			if err != nil {
				return argUsage(err, map[string]string{})
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(wire.FromStockImportResult(r))
		})
	}
	cmd.AddCommand(set, imp)
	return cmd
}

// stockImportFileMax bounds an import's file, as the API bounds its body
// (httpapi.BodyMax).
const stockImportFileMax = 1 << 20
