package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func init() {
	register(func() *cobra.Command {
		return &cobra.Command{
			Use:   "version",
			Short: "print holdfast's module version and the commit it was built from",
			Args:  noArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				_, err := fmt.Fprintln(cmd.OutOrStdout(), versionString())
				return err
			},
		}
	})
}

// versionString is the module version and VCS commit the binary was built
// from, as the Go toolchain stamped them (runtime/debug.ReadBuildInfo).
func versionString() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "holdfast (no build information)"
	}
	version := bi.Main.Version
	if version == "" {
		version = "(devel)"
	}
	var commit, at, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = ", modified"
			}
		}
	}
	if commit == "" {
		commit = "unknown"
	}
	if at != "" {
		at = ", " + at
	}
	return fmt.Sprintf("holdfast %s (commit %s%s%s, %s)", version, commit, at, modified, bi.GoVersion)
}
