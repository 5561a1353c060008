package main

import (
	"encoding/json"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/wire"
)

func init() { register(newMergeCmd) }

func newMergeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "merge --shop N --from CHECKOUT --into CHECKOUT",
		Short: "move a checkout's held lines into another checkout; prints the destination's hold",
		Long: `Move the held lines of checkout --from into checkout --into, as POST
/v1/shops/{shop}/reservations/{from}/merge does: in one transaction, lines
of the same key summed, no unit released or taken again; --into unknown is
created with --from's lines and expiry. --from ends released with
merged_into. A retry answers the same hold.

It runs on the database behind DATABASE_URL, or the embedded one in
--data-dir (with --engine mariadb: the private MariaDB of the serve running
there), and needs its schema current (it never migrates).`,
		Args: noArgs,
	}
	var shop int64
	var from, into string
	fs := cmd.Flags()
	dataDir := dataDirFlag(fs)
	engine := engineFlag(fs)
	fs.Int64Var(&shop, "shop", 0, "the shop (required)")
	fs.StringVar(&from, "from", "", "the checkout whose lines move (required)")
	fs.StringVar(&into, "into", "", "the checkout that takes them (required)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if shop <= 0 {
			return usageError("--shop is required and positive")
		}
		f, err := uuid.Parse(from)
		if err != nil {
			return usageError("--from: must be a checkout id (a UUID)")
		}
		i, err := uuid.Parse(into)
		if err != nil {
			return usageError("--into: must be a checkout id (a UUID)")
		}
		return withEngine(cmd.Context(), *engine, *dataDir, func(e holdfast.Engine) error {
			h, err := e.MergeCheckouts(cmd.Context(), shop, f, i)
			if err != nil {
				return argUsage(err, map[string]string{"checkout_id": "from", "into": "into", "shop_id": "shop"})
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(wire.FromHold(h))
		})
	}
	return cmd
}
