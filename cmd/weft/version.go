package main

import (
	"fmt"
	"io"
	goruntime "runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/weft-run/weft/store/sqlite"
)

// versionInfo is what weft version prints.
type versionInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	CommitAt  string `json:"commit_time,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	Go        string `json:"go"`
	Platform  string `json:"platform"`
	Wazero    string `json:"wazero"`
	SQLite    string `json:"sqlite"`
	SQLiteLib string `json:"sqlite_driver"`
}

// buildVersion reads the version of the binary and of the libraries that
// shape its behaviour from the build information Go records.
func buildVersion() versionInfo {
	v := versionInfo{
		Version: "(unknown)", Go: goruntime.Version(), Platform: goruntime.GOOS + "/" + goruntime.GOARCH,
		Wazero: "(unknown)", SQLite: sqlite.LibraryVersion(), SQLiteLib: "(unknown)",
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	v.Version = bi.Main.Version
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.CommitAt = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	for _, dep := range bi.Deps {
		if dep.Replace != nil {
			dep = dep.Replace
		}
		switch dep.Path {
		case "github.com/tetratelabs/wazero":
			v.Wazero = dep.Version
		case "modernc.org/sqlite":
			v.SQLiteLib = dep.Version
		}
	}
	return v
}

// String is the one-line form of --version.
func (v versionInfo) String() string {
	s := "weft " + v.Version
	if v.Commit != "" {
		c := v.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		s += " (" + c
		if v.Modified {
			s += ", modified"
		}
		s += ")"
	}
	return s
}

// write prints v as lines of name and value.
func (v versionInfo) write(w io.Writer) error {
	commit := v.Commit
	if commit == "" {
		commit = "(unknown)"
	} else if v.Modified {
		commit += " (modified)"
	}
	_, err := fmt.Fprintf(w, "weft     %s\ncommit   %s\ngo       %s %s\nwazero   %s\nsqlite   %s (modernc.org/sqlite %s)\n",
		v.Version, commit, v.Go, v.Platform, v.Wazero, v.SQLite, v.SQLiteLib)
	return err
}

func newVersionCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "print the versions of weft, Go, wazero and SQLite",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := buildVersion()
			if asJSON {
				return printJSON(cmd.OutOrStdout(), v)
			}
			return v.write(cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for scripts")
	return cmd
}
