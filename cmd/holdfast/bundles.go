package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/holdfast/holdfast"
)

func init() { register(newBundlesCmd) }

// newBundlesCmd is `holdfast bundles set|get|delete`: a shop's bundle
// items, as PUT/GET/DELETE /v1/shops/{shop}/bundles/{item} do.
func newBundlesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bundles",
		Short: "define, read and delete a shop's bundle items (components × quantities)",
		Long: fmt.Sprintf(`A bundle item stands for components × quantities: reserving a line of it
reserves every component (the line's quantity × the component's), all or
nothing, and the hold's lines are the components. At most %d components;
bundles do not nest, and a stocked item cannot be a bundle.`, holdfast.BundleComponentsMax),
		Args: noArgs,
	}
	var dataDir, engine string
	var shop, item int64
	common := func(c *cobra.Command) {
		fs := c.Flags()
		dataDirVar(fs, &dataDir)
		fs.StringVar(&engine, "engine", "", "database engine: "+enginePostgres+" or "+engineMySQL+"; empty: from DATABASE_URL (mysql:// selects "+engineMySQL+"), else "+enginePostgres)
		fs.Int64Var(&shop, "shop", 0, "the shop (required)")
		fs.Int64Var(&item, "item", 0, "the bundle's item id (required)")
	}
	names := map[string]string{"shop_id": "shop", "item_id": "item", "components": "components"}
	show := func(c *cobra.Command, b *holdfast.Bundle) error {
		return json.NewEncoder(c.OutOrStdout()).Encode(b)
	}

	var comps []string
	set := &cobra.Command{
		Use:   "set --shop N --item B --component ITEMxQTY [--component ITEMxQTY …]",
		Short: "define (or redefine) a bundle",
		Args:  noArgs,
	}
	common(set)
	set.Flags().StringArrayVar(&comps, "component", nil, "a component as `ITEMxQTY` (e.g. 42x2), repeated in order")
	set.RunE = func(c *cobra.Command, _ []string) error {
		b := holdfast.Bundle{ShopID: shop, ItemID: item}
		for i, s := range comps {
			id, q, ok := strings.Cut(s, "x")
			n, err1 := strconv.ParseInt(id, 10, 64)
			m, err2 := strconv.Atoi(q)
			if !ok || err1 != nil || err2 != nil {
				return fmt.Errorf("--component %d (%q): want ITEMxQTY, e.g. 42x2", i+1, s)
			}
			b.Components = append(b.Components, holdfast.BundleComponent{ItemID: n, Quantity: m})
		}
		if err := b.Validate(holdfast.Config{}); err != nil {
			return argUsage(err, names)
		}
		return withEngine(c.Context(), engine, dataDir, func(e holdfast.Engine) error {
			if err := e.SetBundle(c.Context(), b); err != nil {
				return argUsage(err, names)
			}
			return show(c, &b)
		})
	}

	get := &cobra.Command{Use: "get --shop N --item B", Short: "print a bundle's definition as JSON", Args: noArgs}
	common(get)
	get.RunE = func(c *cobra.Command, _ []string) error {
		return withEngine(c.Context(), engine, dataDir, func(e holdfast.Engine) error {
			b, err := e.Bundle(c.Context(), shop, item)
			if err != nil {
				return argUsage(err, names)
			}
			return show(c, b)
		})
	}

	del := &cobra.Command{Use: "delete --shop N --item B", Short: "delete a bundle's definition (none is no error)", Args: noArgs}
	common(del)
	del.RunE = func(c *cobra.Command, _ []string) error {
		return withEngine(c.Context(), engine, dataDir, func(e holdfast.Engine) error {
			if err := e.DeleteBundle(c.Context(), shop, item); err != nil {
				return argUsage(err, names)
			}
			fmt.Fprintf(c.OutOrStdout(), "bundle %d of shop %d deleted\n", item, shop)
			return nil
		})
	}
	cmd.AddCommand(set, get, del)
	return cmd
}
