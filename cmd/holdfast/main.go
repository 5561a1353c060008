// Command holdfast runs and operates holdfast: inventory reservations on
// PostgreSQL. Each subcommand lives in its own file and registers itself.
//
// The command line is built on cobra (github.com/spf13/cobra), the command
// library of kubectl, gh and most Go infrastructure tools: one usage style,
// --help everywhere, flags anywhere on the line (GNU style, via pflag), and
// shell completion, without hand-written parsing.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/holdfast/holdfast"
)

// commands are the constructors of the subcommands, registered by each
// command's file. A fresh tree is built per run, so tests can run the
// command line in-process.
var commands []func() *cobra.Command

func register(c func() *cobra.Command) { commands = append(commands, c) }

// errUsage marks a usage error: exit status 2.
var errUsage = errors.New("usage")

// usageError is a usage error with its message.
func usageError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}

// exitInterrupted is the exit status of a command stopped by Ctrl-C
// (SIGINT) or SIGTERM, as shells report a process killed by SIGINT.
const exitInterrupted = 130

// exitError carries a chosen exit status (doctor: critical findings).
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// envPrefix starts the environment variable of every flag: --data-dir is
// also HOLDFAST_DATA_DIR. A flag given on the command line wins.
const envPrefix = "HOLDFAST_"

// envName is the environment variable of a flag whose name means one
// thing in every command: HOLDFAST_<FLAG>.
func envName(flag string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// perCommandEnv are the flag names that mean different things in different
// commands (--json is a file for bench and true/false elsewhere; --addr is
// where serve listens and where webhooks receive listens; --limit and
// --strategy differ likewise). Their variables name the command:
// HOLDFAST_<COMMAND>_<FLAG> (HOLDFAST_BENCH_JSON, HOLDFAST_DOCTOR_JSON,
// HOLDFAST_WEBHOOKS_RECEIVE_ADDR), except for the command named here, which
// keeps HOLDFAST_<FLAG> (serve's HOLDFAST_ADDR, which deployments set).
var perCommandEnv = map[string]string{
	"json":     "",
	"addr":     "holdfast serve",
	"limit":    "",
	"strategy": "",
	"pool-cap": "",
	"all":      "",
	"shop":     "", // a list for shadow enroll; and a shop from the environment must not scope every command
	"http":     "", // demo drives the sale over HTTP; bench measures the service instead of the table
	"seed":     "", // demo's; HOLDFAST_SEED is the test suite's seed (README, Testing)
}

// flagEnv is the environment variable of cmd's flag: one meaning each.
func flagEnv(cmd *cobra.Command, flag string) string {
	owner, scoped := perCommandEnv[flag]
	if !scoped || owner == cmd.CommandPath() {
		return envName(flag)
	}
	path := strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
	return envPrefix + strings.ToUpper(strings.NewReplacer(" ", "_", "-", "_").Replace(path)) + "_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// newRoot builds the command tree.
func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "holdfast",
		Short: "inventory reservations on PostgreSQL or MySQL/MariaDB",
		Long: `holdfast: inventory reservations on PostgreSQL or MySQL/MariaDB.

DATABASE_URL selects the database. Unset, holdfast runs on an embedded private
PostgreSQL cluster from the local server binaries, kept in --data-dir
(default ./.holdfast, relative to the working directory): every command with
the same --data-dir uses the same database, the running server's when one
runs. Only serve and migrate create it; any other command run where there is
none (another directory) refuses, naming the directory, rather than make a
second, empty database. Only migrate, serve, keys create and webhooks add
create or change the schema; every other command only reads it. Every command
but shadow (PostgreSQL only: the Redis → holdfast migration) also runs on MySQL/MariaDB: DATABASE_URL=mysql://…, or --engine mariadb
(demo and bench: a private throwaway MariaDB; the others: the one of the
serve --engine mariadb running with the same --data-dir). Every flag can also be set
from the environment as HOLDFAST_<FLAG> (e.g. HOLDFAST_DATA_DIR, HOLDFAST_ADDR),
the command line winning; each variable has one meaning. Flags whose meaning
differs by command (--json, --limit, --strategy, --pool-cap, --all, --shop,
--http, --seed, and --addr outside serve) are HOLDFAST_<COMMAND>_<FLAG> (HOLDFAST_BENCH_JSON,
HOLDFAST_DOCTOR_JSON, HOLDFAST_WEBHOOKS_RECEIVE_ADDR); each --help names them.`,
		Version:           versionString(),
		SilenceUsage:      true,
		SilenceErrors:     true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error { return flagsFromEnv(cmd) },
	}
	root.SetVersionTemplate("{{.Version}}\n")
	for _, c := range commands {
		root.AddCommand(c())
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return fmt.Errorf("%w: %w", errUsage, flagValueError(c, err)) })
	annotateEnv(root)
	return root
}

// annotateEnv names each flag's environment variable in its help.
func annotateEnv(c *cobra.Command) {
	c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) { addEnvUsage(c, f) })
	c.PersistentFlags().VisitAll(func(f *pflag.Flag) { addEnvUsage(c, f) })
	for _, sub := range c.Commands() {
		annotateEnv(sub)
	}
}

func addEnvUsage(c *cobra.Command, f *pflag.Flag) {
	if f.Name == "help" || f.Name == "version" || strings.Contains(f.Usage, "(env ") {
		return
	}
	f.Usage += " (env " + flagEnv(c, f.Name) + ")"
}

// flagOwner is the command that defines f: an ancestor for an inherited
// persistent flag (webhooks' --shop), else cmd.
func flagOwner(cmd *cobra.Command, f *pflag.Flag) *cobra.Command {
	owner := cmd
	for c := cmd; c != nil; c = c.Parent() {
		if c.PersistentFlags().Lookup(f.Name) == f {
			owner = c
		}
	}
	return owner
}

// flagsFromEnv sets every flag not given on the command line from its
// environment variable (flagEnv). A set HOLDFAST_<FLAG> that this command
// does not read because its flag is per command is named on stderr, so it
// is not silently ignored.
func flagsFromEnv(cmd *cobra.Command) error {
	var err error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Name == "help" || f.Name == "version" {
			return
		}
		name := flagEnv(flagOwner(cmd, f), f.Name)
		if name != envName(f.Name) && os.Getenv(envName(f.Name)) != "" {
			fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s is not read (--%s means different things in different commands); set %s\n", cmd.CommandPath(), envName(f.Name), f.Name, name)
		}
		if f.Changed {
			return
		}
		if v, ok := os.LookupEnv(name); ok && v != "" {
			if serr := cmd.Flags().Set(f.Name, v); serr != nil {
				err = usageError("%s=%q (--%s) %s", name, v, f.Name, wants(f))
			}
		}
	})
	return err
}

// noArgs rejects positional arguments as a usage error.
func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError("unexpected arguments %q", args)
	}
	return nil
}

// execute runs the command line and returns the exit status: 0, 1 on
// failure, 2 on a usage error, or a command's own (doctor: 2 on critical
// findings).
func execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	// The audit log names the command line as who made its changes
	// (stock, strategy, keys, cancels); the server's requests name their
	// key instead.
	ctx = holdfast.WithActor(ctx, holdfast.Actor{Via: "cli"})
	root := newRoot()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return 0
	}
	name := "holdfast"
	if cmd != nil {
		name = cmd.CommandPath()
	}
	var ee *exitError
	switch {
	case ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, ctx.Err())) && !errors.As(err, &ee):
		// Ctrl-C while starting or stopping: not a failure to explain.
		fmt.Fprintln(stderr, name+": interrupted")
		return exitInterrupted
	case errors.As(err, &ee):
		if ee.msg != "" {
			fmt.Fprintln(stderr, name+":", ee.msg)
		}
		return ee.code
	case errors.Is(err, errUsage) || strings.HasPrefix(err.Error(), "unknown command"):
		msg := strings.TrimPrefix(err.Error(), errUsage.Error()+": ")
		fmt.Fprintf(stderr, "%s: %s\nRun '%s --help' for usage.\n", name, msg, name)
		return 2
	default:
		fmt.Fprintln(stderr, name+":", failureLine(err))
		return 1
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
