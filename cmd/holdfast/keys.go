package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/holdfast/holdfast/httpapi"
	"github.com/holdfast/holdfast/migrate"
)

func init() { register(newKeysCmd) }

func newKeysCmd() *cobra.Command {
	keys := &cobra.Command{
		Use:   "keys",
		Short: "create, revoke and list API keys of holdfast serve",
		Long: `Create, revoke and list the API keys holdfast serve accepts.

A new key is printed once, alone on the last line of stdout; only its hash is
stored. With the embedded database, keys uses the cluster in --data-dir, the
running server's when serve runs.`,
		Args: noArgs,
	}
	dataDir := dataDirFlag(keys.PersistentFlags())

	create := &cobra.Command{
		Use:   "create (--shop N | --admin)",
		Short: "create a key that reaches shop N only, or (--admin) every shop",
		Args:  noArgs,
	}
	shop := create.Flags().Int64("shop", 0, "the shop the key reaches")
	admin := create.Flags().Bool("admin", false, "a key that reaches every shop")
	create.RunE = func(cmd *cobra.Command, _ []string) error {
		if *admin == (*shop != 0) || *shop < 0 {
			return usageError("keys create needs exactly one of --shop N (N > 0) or --admin")
		}
		return withKeysDB(cmd.Context(), persistent, *dataDir, func(ctx context.Context, pool *pgxpool.Pool) error {
			key, rec, err := httpapi.CreateKey(ctx, pool, *shop, *admin)
			if err != nil {
				return err
			}
			scope := fmt.Sprintf("shop %d", rec.ShopID)
			if rec.Admin {
				scope = "every shop (admin)"
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "created key %d for %s; it is shown this once, only its hash is stored:\n%s\n", rec.ID, scope, key)
			return err
		})
	}

	revoke := &cobra.Command{
		Use:   "revoke ID|KEY",
		Short: "revoke a key by its id or the key itself",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError("keys revoke needs one key id or key")
			}
			return nil
		},
	}
	revoke.RunE = func(cmd *cobra.Command, args []string) error {
		return withKeysDB(cmd.Context(), existing, *dataDir, func(ctx context.Context, pool *pgxpool.Pool) error {
			id, err := httpapi.RevokeKey(ctx, pool, args[0])
			if errors.Is(err, httpapi.ErrKeyNotFound) {
				return &exitError{code: 1, msg: "no live key matches " + redact(args[0])}
			}
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "revoked key %d (servers stop accepting it within %v)\n", id, httpapi.KeyCacheTTLDefault)
			return err
		})
	}

	list := &cobra.Command{
		Use:   "list",
		Short: "list keys, newest first",
		Args:  noArgs,
	}
	limit := list.Flags().Int("limit", 100, "at most this many keys, newest first")
	list.RunE = func(cmd *cobra.Command, _ []string) error {
		if *limit < 1 || *limit > 100_000 {
			return usageError("keys list takes --limit between 1 and 100000")
		}
		return withKeysDB(cmd.Context(), existing, *dataDir, func(ctx context.Context, pool *pgxpool.Pool) error {
			keys, err := httpapi.ListKeys(ctx, pool, *limit)
			if err != nil {
				return err
			}
			return writeKeys(cmd.OutOrStdout(), keys)
		})
	}
	keys.AddCommand(create, revoke, list)
	return keys
}

func writeKeys(w io.Writer, keys []httpapi.APIKey) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSCOPE\tCREATED\tREVOKED")
	for _, k := range keys {
		scope := fmt.Sprintf("shop %d", k.ShopID)
		if k.Admin {
			scope = "admin"
		}
		revoked := "-"
		if k.RevokedAt != nil {
			revoked = k.RevokedAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", k.ID, scope, k.CreatedAt.UTC().Format(time.RFC3339), revoked)
	}
	return tw.Flush()
}

// withKeysDB runs f on the keys' database, migrated: the keys table comes
// with the schema, and a first `keys create` on a fresh database applies
// it, as serve would.
func withKeysDB(ctx context.Context, mode dbMode, dataDir string, f func(context.Context, *pgxpool.Pool) error) error {
	db, err := openDatabase(ctx, mode, dataDir, stderrf)
	if err != nil {
		return err
	}
	defer db.Close()
	pool, err := db.pool(ctx, 2, "holdfast-keys")
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := migrate.Up(ctx, pool); err != nil {
		return err
	}
	return f(ctx, pool)
}

// redact keeps a key out of error output: only its first characters.
func redact(s string) string {
	if len(s) > 8 {
		return s[:8] + "…"
	}
	return s
}
