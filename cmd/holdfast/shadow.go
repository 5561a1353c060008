package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	goredis "github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/legacy"
	lredis "github.com/holdfast/holdfast/legacy/redis"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgshadow"
	"github.com/holdfast/holdfast/shadow"
)

func init() { register(newShadowCmd) }

// Bounds of the shadow command's flags.
const (
	// shadowLifetimeMax bounds --hold-lifetime-max.
	shadowLifetimeMax = 7 * 24 * time.Hour
	// shadowComparedMax bounds --min-compared.
	shadowComparedMax = 1_000_000_000
	// shadowSamplesMax bounds samples --limit (the layer keeps no more).
	shadowSamplesMax = shadow.SamplesPerShopMax
	// legacyPingTimeout bounds the check that the legacy Redis answers.
	legacyPingTimeout = 5 * time.Second
)

// shadowFlags are the flags every shadow subcommand shares.
type shadowFlags struct {
	dataDir     string
	legacyURL   string
	keyTemplate string
	prefix      string
	lifetime    time.Duration
	engine      string
}

func newShadowCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "shadow",
		Short: "move shops from a legacy Redis hold store onto holdfast: modes, report, ramp, kill switch",
		Long: `Operate the shadow layer (package shadow, docs/MIGRATION.md): each enrolled shop has a
mode, legacy → shadow → primary → holdfast, one step at a time; back to legacy from
any mode is the kill switch. Modes live in the database: the servers running the layer
apply a change within a second.

Commands that read or seed the legacy store (reconcile; moving a shop to shadow, which
seeds holdfast's stock from the legacy ledger) need --legacy redis://… with the key
template and prefix the legacy uses. --hold-lifetime-max must be the servers' (a shop
warms that long after entering shadow).

shadow runs on PostgreSQL only (DATABASE_URL postgres://… or the embedded
PostgreSQL): it is the one command that does not run on MySQL/MariaDB.`,
		Args: noArgs,
	}
	f := &shadowFlags{}
	pf := cmd.PersistentFlags()
	dataDirVar(pf, &f.dataDir)
	pf.StringVar(&f.legacyURL, "legacy", "", "the legacy Redis hold store, redis://[user:password@]host:port/db")
	pf.StringVar(&f.keyTemplate, "legacy-key-template", lredis.KeyTemplateDefault, "the legacy's stock counter key; {shop}, {item} and {location} are replaced")
	pf.StringVar(&f.prefix, "legacy-prefix", lredis.PrefixDefault, "the legacy's prefix of hold hashes and the expiry set")
	pf.StringVar(&f.engine, "engine", "", "postgres, the only engine shadow runs on (mariadb is refused)")
	pf.DurationVar(&f.lifetime, "hold-lifetime-max", holdfast.HoldLifetimeMaxDefault, "the longest a legacy hold lives: a shop warms this long after entering shadow")

	cmd.AddCommand(newShadowEnrollCmd(f), newShadowReportCmd(f), newShadowPlanCmd(f), newShadowSetCmd(f),
		newShadowPromoteCmd(f), newShadowRevertCmd(f), newShadowReconcileCmd(f), newShadowSamplesCmd(f))
	return cmd
}

func newShadowEnrollCmd(f *shadowFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "enroll --shop N[,N…]",
		Short: "enroll shops in the layer, in mode legacy (enrolled shops keep their mode)",
		Args:  noArgs,
	}
	shops := cmd.Flags().Int64Slice("shop", nil, "the shops to enroll: comma-separated shop `ids` (--shop 1,2 or --shop 1 --shop 2)")
	cmd.Flags().Lookup("shop").DefValue = "" // no "(default [])": there is none
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if len(*shops) == 0 {
			return usageError("shadow enroll needs --shop N[,N…]")
		}
		for _, s := range *shops {
			if s <= 0 {
				return usageError("--shop %d: shop ids are > 0", s)
			}
		}
		return withShadow(cmd.Context(), f, false, func(ctx context.Context, sh *shadow.Engine) error {
			if err := sh.Enroll(ctx, *shops...); err != nil {
				return shadowError(err)
			}
			for _, s := range *shops {
				m, _ := sh.Mode(s)
				fmt.Fprintf(cmd.OutOrStdout(), "shop %d: %s\n", s, m)
			}
			return nil
		})
	}
	return cmd
}

func newShadowReportCmd(f *shadowFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "report",
		Short: "per shop: operations compared, agreement, disagreements by kind, p50/p99 each side, warming",
		Args:  noArgs,
	}
	asJSON := cmd.Flags().Bool("json", false, "print the report as JSON")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return withShadow(cmd.Context(), f, false, func(ctx context.Context, sh *shadow.Engine) error {
			reps, err := sh.Report(ctx)
			if err != nil {
				return err
			}
			if *asJSON {
				return writeJSON(cmd.OutOrStdout(), reps)
			}
			return writeShadowReport(cmd.OutOrStdout(), reps)
		})
	}
	return cmd
}

// thresholdFlags adds the readiness thresholds' flags, defaulting to the
// layer's defaults.
func thresholdFlags(fs *pflag.FlagSet) func() (shadow.Thresholds, error) {
	def := shadow.Thresholds{}.WithDefaults()
	agreement := fs.Float64("min-agreement", def.AgreementMin, "agreement rate a shop needs to be ready (0 < x ≤ 1)")
	compared := fs.Int64("min-compared", def.ComparedMin, "compared operations a shop needs to be ready")
	p99 := fs.Duration("max-p99", def.P99Max, "holdfast's p99 latency a ready shop stays within")
	ratio := fs.Float64("max-p99-ratio", def.P99RatioMax, "holdfast's p99 a ready shop stays within, as a multiple of the legacy's")
	until := fs.String("until", string(def.Until), "the furthest mode promote --next moves a shop to: shadow, primary or holdfast")
	return func() (shadow.Thresholds, error) {
		th := shadow.Thresholds{AgreementMin: *agreement, ComparedMin: *compared, P99Max: *p99, P99RatioMax: *ratio}
		switch {
		case !(*agreement > 0 && *agreement <= 1):
			return th, usageError("--min-agreement must be above 0 and at most 1")
		case *compared < 1 || *compared > shadowComparedMax:
			return th, usageError("--min-compared must be between 1 and %d", shadowComparedMax)
		case *p99 <= 0:
			return th, usageError("--max-p99 must be above 0")
		case !(*ratio > 0):
			return th, usageError("--max-p99-ratio must be above 0")
		}
		m, err := shadow.ParseMode(*until)
		if err != nil || m == shadow.ModeLegacy {
			return th, usageError("unknown --until %q (want shadow, primary or holdfast)", *until)
		}
		th.Until = m
		return th, nil
	}
}

func newShadowPlanCmd(f *shadowFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "the ramp: enrolled shops smallest traffic first, each marked ready for its next mode or not (and why)",
		Args:  noArgs,
	}
	asJSON := cmd.Flags().Bool("json", false, "print the plan as JSON")
	thresholds := thresholdFlags(cmd.Flags())
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		th, err := thresholds()
		if err != nil {
			return err
		}
		return withShadow(cmd.Context(), f, false, func(ctx context.Context, sh *shadow.Engine) error {
			plan, err := sh.Plan(ctx, th)
			if err != nil {
				return err
			}
			if *asJSON {
				return writeJSON(cmd.OutOrStdout(), plan)
			}
			return writeShadowPlan(cmd.OutOrStdout(), plan)
		})
	}
	return cmd
}

func newShadowSetCmd(f *shadowFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "set --shop N --mode legacy|shadow|primary|holdfast",
		Short: "move one shop to a mode: one step forward, or back to legacy from any mode",
		Args:  noArgs,
	}
	shop := cmd.Flags().Int64("shop", 0, "the shop")
	mode := cmd.Flags().String("mode", "", "the mode: legacy, shadow, primary or holdfast")
	reason := cmd.Flags().String("reason", "set by holdfast shadow set", "why, for the mode changes' audit trail")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := needShop("shadow set", *shop); err != nil {
			return err
		}
		if *mode == "" {
			return usageError("shadow set needs --mode legacy|shadow|primary|holdfast")
		}
		to, err := shadow.ParseMode(*mode)
		if err != nil {
			return usageError("%s", trimShadow(err))
		}
		return withShadow(cmd.Context(), f, false, func(ctx context.Context, sh *shadow.Engine) error {
			from, _ := sh.Mode(*shop)
			if err := sh.SetMode(ctx, *shop, to, *reason); err != nil {
				return shadowError(err)
			}
			return printChange(cmd.OutOrStdout(), cmd.ErrOrStderr(), *shop, from, to)
		})
	}
	return cmd
}

func newShadowPromoteCmd(f *shadowFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "promote (--shop N | --next)",
		Short: "move one shop one step forward; --next: the smallest ready shop of the plan",
		Args:  noArgs,
	}
	shop := cmd.Flags().Int64("shop", 0, "the shop")
	next := cmd.Flags().Bool("next", false, "promote the smallest shop (by traffic) that the plan marks ready")
	thresholds := thresholdFlags(cmd.Flags())
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if *next == (*shop != 0) {
			return usageError("shadow promote needs exactly one of --shop N or --next")
		}
		if !*next {
			if err := needShop("shadow promote", *shop); err != nil {
				return err
			}
		}
		th, err := thresholds()
		if err != nil {
			return err
		}
		return withShadow(cmd.Context(), f, false, func(ctx context.Context, sh *shadow.Engine) error {
			out := cmd.OutOrStdout()
			if *next {
				p, err := sh.PromoteNext(ctx, th)
				if errors.Is(err, shadow.ErrNothingReady) {
					return &exitError{code: 1, msg: "no shop is ready to promote (until " + string(th.Until) + "); `holdfast shadow plan` says what holds each back"}
				}
				if err != nil {
					return shadowError(err)
				}
				if err := printChange(out, cmd.ErrOrStderr(), p.ShopID, previous(p.Mode), p.Mode); err != nil {
					return err
				}
				_, err = fmt.Fprintf(out, "  the smallest ready shop by traffic (%d ops): %s\n", p.Ops, p.Why)
				return err
			}
			from, ok := sh.Mode(*shop)
			if ok && from == shadow.ModeHoldfast {
				return &exitError{code: 1, msg: fmt.Sprintf("shop %d is in holdfast already: there is no further mode", *shop)}
			}
			to, err := sh.Promote(ctx, *shop)
			if err != nil {
				return shadowError(err)
			}
			return printChange(out, cmd.ErrOrStderr(), *shop, from, to)
		})
	}
	return cmd
}

func newShadowRevertCmd(f *shadowFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "revert (--shop N | --all)",
		Short: "the kill switch: back to legacy truth at once, for one shop or every shop",
		Args:  noArgs,
	}
	shop := cmd.Flags().Int64("shop", 0, "the shop")
	all := cmd.Flags().Bool("all", false, "every enrolled shop")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if *all == (*shop != 0) {
			return usageError("shadow revert needs exactly one of --shop N or --all")
		}
		if !*all {
			if err := needShop("shadow revert", *shop); err != nil {
				return err
			}
		}
		return withShadow(cmd.Context(), f, false, func(ctx context.Context, sh *shadow.Engine) error {
			out := cmd.OutOrStdout()
			if !*all {
				from, _ := sh.Mode(*shop)
				if err := sh.Revert(ctx, *shop); err != nil {
					return shadowError(err)
				}
				return printChange(out, cmd.ErrOrStderr(), *shop, from, shadow.ModeLegacy)
			}
			before := map[int64]shadow.Mode{}
			for _, m := range sh.ShopModes() {
				before[m.ShopID] = m.Mode
			}
			done, err := sh.RevertAll(ctx)
			for _, s := range done {
				if perr := printChange(out, cmd.ErrOrStderr(), s, before[s], shadow.ModeLegacy); perr != nil {
					return perr
				}
			}
			if err != nil && len(done) > 0 {
				return fmt.Errorf("reverted the shops above, then: %w", err)
			}
			if err != nil {
				return shadowError(err)
			}
			if len(done) == 0 {
				fmt.Fprintln(out, "every enrolled shop is in legacy already: nothing changed")
			}
			return nil
		})
	}
	return cmd
}

func newShadowReconcileCmd(f *shadowFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "reconcile --shop N --legacy redis://…",
		Short: "compare the legacy's counts with holdfast's stock per key and list drift with its likely cause",
		Args:  noArgs,
	}
	shop := cmd.Flags().Int64("shop", 0, "the shop")
	asJSON := cmd.Flags().Bool("json", false, "print the reconciliation as JSON")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := needShop("shadow reconcile", *shop); err != nil {
			return err
		}
		return withShadow(cmd.Context(), f, true, func(ctx context.Context, sh *shadow.Engine) error {
			rec, err := sh.Reconcile(ctx, *shop)
			if err != nil {
				return shadowError(err)
			}
			if *asJSON {
				return writeJSON(cmd.OutOrStdout(), rec)
			}
			return writeReconciliation(cmd.OutOrStdout(), rec)
		})
	}
	return cmd
}

func newShadowSamplesCmd(f *shadowFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "samples --shop N",
		Short: "the shop's newest recorded disagreements, with the request and both answers (JSON)",
		Args:  noArgs,
	}
	shop := cmd.Flags().Int64("shop", 0, "the shop")
	limit := cmd.Flags().Int("limit", 20, "at most this many, newest first")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := needShop("shadow samples", *shop); err != nil {
			return err
		}
		if *limit < 1 || *limit > shadowSamplesMax {
			return usageError("shadow samples takes --limit between 1 and %d", shadowSamplesMax)
		}
		return withShadow(cmd.Context(), f, false, func(ctx context.Context, sh *shadow.Engine) error {
			if _, ok := sh.Mode(*shop); !ok {
				return shadowError(&shadow.ModeError{Err: shadow.ErrUnknownShop, Shop: *shop})
			}
			s, err := sh.Samples(ctx, *shop, *limit)
			if err != nil {
				return err
			}
			if s == nil {
				s = []shadow.Sample{}
			}
			return writeJSON(cmd.OutOrStdout(), s)
		})
	}
	return cmd
}

// needShop is the usage error of a missing or invalid --shop.
func needShop(cmd string, shop int64) error {
	switch {
	case shop == 0:
		return usageError("%s needs --shop N", cmd)
	case shop < 0:
		return usageError("--shop %d: shop ids are > 0", shop)
	}
	return nil
}

// errShadowPostgresOnly is shadow's answer on MySQL/MariaDB.
var errShadowPostgresOnly = &exitError{code: 1, msg: "shadow runs on PostgreSQL only; the shadow layer (Redis → holdfast) keeps its modes and ledger in PostgreSQL: set DATABASE_URL to a postgres:// URL or unset it for the embedded PostgreSQL"}

// shadowOnPostgres refuses MySQL/MariaDB (--engine or a mysql:// DATABASE_URL).
func shadowOnPostgres(flag string) error {
	switch flag {
	case "", enginePostgres, "postgresql":
	case engineMySQL, "mariadb":
		return errShadowPostgresOnly
	default:
		return usageError("unknown --engine %q (shadow runs on %s only)", flag, enginePostgres)
	}
	if isMySQLURL(os.Getenv("DATABASE_URL")) {
		return errShadowPostgresOnly
	}
	return nil
}

// withShadow runs fn on a shadow layer over the command's database,
// which must have the current schema (it never creates one), with the legacy store when --legacy is given
// (needLegacy: the command cannot run without it). The layer runs no
// workers: each call reads and writes the database itself.
func withShadow(ctx context.Context, f *shadowFlags, needLegacy bool, fn func(context.Context, *shadow.Engine) error) error {
	if f.lifetime < holdfast.HoldTTLMin || f.lifetime > shadowLifetimeMax {
		return usageError("--hold-lifetime-max must be between %v and %v", holdfast.HoldTTLMin, shadowLifetimeMax)
	}
	if err := shadowOnPostgres(f.engine); err != nil {
		return err
	}
	if needLegacy && f.legacyURL == "" {
		return usageError("this command reads the legacy store: pass --legacy redis://… (or set %s)", envName("legacy"))
	}
	var ropt *goredis.Options
	if f.legacyURL != "" {
		o, err := goredis.ParseURL(f.legacyURL)
		if err != nil {
			// go-redis' parse errors may quote the URL and its password.
			return usageError("--legacy is not a valid redis:// URL")
		}
		ropt = o
	}
	db, err := openDatabase(ctx, existing, f.dataDir, stderrf)
	if err != nil {
		return err
	}
	defer db.Close()
	pool, err := db.pool(ctx, 4, "holdfast-shadow")
	if err != nil {
		return err
	}
	defer pool.Close()
	// The schema is serve's and migrate's to create: shadow writes rows
	// (enroll, set, revert) but never grows a schema in an empty database.
	if err := requireSchema(ctx, pool); err != nil {
		return err
	}
	hf, err := postgres.New(pool, holdfast.Config{})
	if err != nil {
		return err
	}
	var old legacy.Store
	if ropt != nil {
		// A bare dial first: go-redis logs every failed dial of its pool.
		dctx, cancel := context.WithTimeout(ctx, legacyPingTimeout)
		c, err := (&net.Dialer{}).DialContext(dctx, ropt.Network, ropt.Addr)
		cancel()
		if err != nil {
			return legacyDown(ropt.Addr, err)
		}
		c.Close()
		rdb := goredis.NewClient(ropt)
		defer rdb.Close()
		store, err := legacyStore(ctx, rdb, pool, f)
		if err != nil {
			return err
		}
		old = store
	}
	sh, err := shadow.New(ctx, pgshadow.NewStore(pool), old, hf, shadow.Config{HoldLifetimeMax: f.lifetime, LegacyExpireInterval: -1})
	if err != nil {
		return err
	}
	return fn(ctx, sh)
}

// legacyStore is the Redis legacy store of --legacy, checked to answer,
// with its SQL ledger's tables made when missing.
func legacyStore(ctx context.Context, rdb *goredis.Client, pool *pgxpool.Pool, f *shadowFlags) (*lredis.Store, error) {
	store, err := lredis.New(rdb, pool, lredis.Config{KeyTemplate: f.keyTemplate, Prefix: f.prefix, HoldLifetimeMax: f.lifetime})
	if err != nil {
		return nil, usageError("--legacy-key-template: %v", err)
	}
	pctx, cancel := context.WithTimeout(ctx, legacyPingTimeout)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		return nil, legacyDown(rdb.Options().Addr, err)
	}
	if err := store.Setup(ctx); err != nil {
		return nil, fmt.Errorf("legacy ledger tables: %w", err)
	}
	return store, nil
}

// shadowError turns the layer's refusals into one-line messages with exit
// status 1; anything else passes through.
func shadowError(err error) error {
	var me *shadow.ModeError
	switch {
	case errors.As(err, &me):
		return &exitError{code: 1, msg: trimShadow(err) + "; nothing changed"}
	case errors.Is(err, shadow.ErrNoBackends):
		return &exitError{code: 1, msg: "this needs the legacy store (moving a shop to shadow seeds holdfast's stock from the legacy ledger; reconcile reads it): pass --legacy redis://… (or set " + envName("legacy") + "); nothing changed"}
	}
	return err
}

func trimShadow(err error) string { return strings.TrimPrefix(err.Error(), "shadow: ") }

// previous is the mode one step before m.
func previous(m shadow.Mode) shadow.Mode {
	for _, x := range shadow.Modes {
		if x.Next() == m {
			return x
		}
	}
	return ""
}

// printChange says what a mode change did.
func printChange(out, errOut io.Writer, shop int64, from, to shadow.Mode) error {
	if from == to {
		_, err := fmt.Fprintf(out, "shop %d: %s already; nothing changed\n", shop, to)
		return err
	}
	what := map[shadow.Mode]string{
		shadow.ModeLegacy:   "the legacy is the truth; holdfast is not written",
		shadow.ModeShadow:   "the legacy is the truth; holdfast gets every operation and the answers are compared",
		shadow.ModePrimary:  "holdfast is the truth; the legacy is still written, so revert stays one switch",
		shadow.ModeHoldfast: "holdfast only; the legacy is no longer written",
	}[to]
	if to == shadow.ModeLegacy && from != shadow.ModeLegacy {
		what = "kill switch: the legacy is the truth again"
	}
	if _, err := fmt.Fprintf(out, "shop %d: %s → %s (%s; running servers apply it within %v)\n", shop, from, to, what, shadow.PollIntervalMax); err != nil {
		return err
	}
	if from == shadow.ModeHoldfast && to == shadow.ModeLegacy {
		fmt.Fprintf(errOut, "warning: shop %d was in holdfast: the legacy missed every operation since; run `holdfast shadow reconcile --shop %d`\n", shop, shop)
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// agreement is a rate as a percentage, "-" when nothing was compared.
func agreement(r shadow.ShopReport) string {
	if r.Compared == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f%%", 100*r.AgreementRate)
}

func latency(l shadow.Latency) string {
	if l.P50 == 0 && l.P99 == 0 {
		return "-"
	}
	return l.P50.Round(10*time.Microsecond).String() + "/" + l.P99.Round(10*time.Microsecond).String()
}

// disagreements is "kind=n, …" by kind, "-" when none.
func disagreements(d map[string]int64) (int64, string) {
	var total int64
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(d)) {
		total += d[k]
		parts = append(parts, k+"="+strconv.FormatInt(d[k], 10))
	}
	if len(parts) == 0 {
		return 0, "-"
	}
	return total, strings.Join(parts, ", ")
}

// warming is a shop's warming state: "warming until T", "warmed", or "-"
// where nothing is compared.
func warming(r shadow.ShopReport) string {
	switch {
	case r.Mode == shadow.ModeLegacy || r.Mode == shadow.ModeHoldfast:
		return "-"
	case r.Warming:
		return "warming until " + r.ReadyAt.UTC().Format(time.RFC3339)
	case r.ReadyAt.IsZero():
		return "-"
	}
	return "warmed"
}

func writeShadowReport(w io.Writer, reps []shadow.ShopReport) error {
	if len(reps) == 0 {
		_, err := fmt.Fprintln(w, "no shop enrolled and no traffic recorded: `holdfast shadow enroll --shop N` first")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SHOP\tMODE\tOPS\tCOMPARED\tAGREEMENT\tDISAGREED\tWARMING OPS\tLEGACY P50/P99\tHOLDFAST P50/P99\tSTATE\tDISAGREEMENTS BY KIND")
	for _, r := range reps {
		n, kinds := disagreements(r.Disagreements)
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%s\t%d\t%d\t%s\t%s\t%s\t%s\n", r.ShopID, r.Mode, r.Ops, r.Compared, agreement(r), n, r.WarmingOps,
			latency(r.Legacy), latency(r.Holdfast), warming(r), kinds)
	}
	return tw.Flush()
}

func writeShadowPlan(w io.Writer, plan []shadow.PlanEntry) error {
	if len(plan) == 0 {
		_, err := fmt.Fprintln(w, "no shop enrolled: `holdfast shadow enroll --shop N` first")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tSHOP\tMODE\tNEXT\tREADY\tOPS\tCOMPARED\tAGREEMENT\tHOLDFAST P50/P99\tWHY")
	for i, p := range plan {
		ready, next := "no", string(p.Next)
		if p.Ready {
			ready = "READY"
		}
		if next == "" {
			next, ready = "-", "-"
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", i+1, p.ShopID, p.Mode, next, ready, p.Ops, p.Compared, agreement(p.ShopReport), latency(p.Holdfast), p.Why)
	}
	return tw.Flush()
}

func writeReconciliation(w io.Writer, rec *shadow.Reconciliation) error {
	fmt.Fprintf(w, "shop %d (mode %s): %d keys compared, %d drift\n", rec.ShopID, rec.Mode, rec.Keys, len(rec.Drift))
	if len(rec.Drift) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ITEM\tLOCATION\tLEGACY ON HAND\tLEGACY RESERVABLE\tAVAILABLE\tSELLABLE\tHELD\tLIKELY CAUSE")
	for _, d := range rec.Drift {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", d.ItemID, d.LocationID, d.LegacyOnHand, d.LegacyReservable, d.Available, d.Sellable, d.Held, d.Cause)
	}
	return tw.Flush()
}

// legacyDown is the one line of a legacy Redis that does not answer: why in
// a few words, not the dialer's "dial tcp …: connect: …", and the next step.
func legacyDown(addr string, err error) error {
	why := "it does not answer"
	var errno syscall.Errno
	switch {
	case errors.As(err, &errno) && errno == syscall.ECONNREFUSED:
		why = "nothing listens there (connection refused)"
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded):
		why = fmt.Sprintf("it did not answer within %v", legacyPingTimeout)
	default:
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) {
			why = "its host name does not resolve"
		}
	}
	return &exitError{code: 1, msg: fmt.Sprintf("the legacy Redis at %s is not reachable: %s; start it, or pass the legacy's address with --legacy redis://host:port/db (or %s)", addr, why, envName("legacy"))}
}
