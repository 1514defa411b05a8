package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/weft-run/weft/runtime/httpapi/client"
)

func newDeployCmd() *cobra.Command {
	var o clientOptions
	var name, idemKey string
	var checkReplay bool
	cmd := &cobra.Command{
		Use:   "deploy FILE.wasm",
		Short: "deploy a WebAssembly module (its name defaults to the file name)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			wasm, err := os.ReadFile(args[0])
			if err != nil {
				return fmt.Errorf("read module: %w", err)
			}
			if name == "" {
				name = strings.TrimSuffix(filepath.Base(args[0]), filepath.Ext(args[0]))
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			h := http.Header{}
			if idemKey != "" {
				h.Set("Idempotency-Key", idemKey)
			}
			var raw json.RawMessage
			path := "/v1/modules/" + url.PathEscape(name)
			if checkReplay {
				path += "?check_replay=true"
			}
			req := &client.Request{Method: http.MethodPut, Path: path, Body: wasm, ContentType: "application/wasm", Header: h}
			if err := c.do(cmd.Context(), req, &raw); err != nil {
				return err
			}
			if o.json {
				_, err := fmt.Fprintln(cmd.OutOrStdout(), string(raw))
				return err
			}
			var m client.Module
			if err := json.Unmarshal(raw, &m); err != nil {
				return fmt.Errorf("decode module: %w", err)
			}
			verb := "deployed"
			if m.Unchanged {
				verb = "unchanged:"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s %s (%d bytes, version %d)\n", verb, m.Name, m.Digest, m.Size, m.Version)
			for _, f := range m.Functions {
				fmt.Fprintf(cmd.OutOrStdout(), "  %-9s %s\n", f.Kind, f.Name)
			}
			return nil
		},
	}
	addClientFlags(cmd, &o)
	cmd.Flags().StringVar(&name, "name", "", "module name (default: the file name without .wasm)")
	cmd.Flags().StringVar(&idemKey, "idempotency-key", "", "Idempotency-Key header for a safe retry")
	cmd.Flags().BoolVar(&checkReplay, "check-replay", false, "refuse the deploy if the new version would not replay the journals of the module's running workflows")
	return cmd
}

func newModulesCmd() *cobra.Command {
	var o clientOptions
	cmd := &cobra.Command{Use: "modules", Short: "list, inspect and remove deployed modules"}
	addClientFlags(cmd, &o)

	list := &cobra.Command{
		Use:   "list",
		Short: "list deployed modules",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			raw, err := o.fetch(cmd, &client.Request{Method: http.MethodGet, Path: "/v1/modules"})
			if err != nil {
				return err
			}
			if o.json {
				_, err := fmt.Fprintln(cmd.OutOrStdout(), string(raw))
				return err
			}
			var page struct {
				Data []client.Module `json:"data"`
			}
			if err := json.Unmarshal(raw, &page); err != nil {
				return fmt.Errorf("decode module list: %w", err)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tDIGEST\tSIZE\tFUNCTIONS")
			for _, m := range page.Data {
				names := make([]string, len(m.Functions))
				for i, f := range m.Functions {
					names[i] = f.Name
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", m.Name, m.Digest, m.Size, strings.Join(names, ","))
			}
			return tw.Flush()
		},
	}
	get := &cobra.Command{
		Use:               "get NAME",
		ValidArgsFunction: completeModuleNames(&o, false),
		Short:             "show one module",
		Args:              cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			raw, err := o.fetch(cmd, &client.Request{Method: http.MethodGet, Path: "/v1/modules/" + url.PathEscape(args[0])})
			if err != nil {
				return err
			}
			return printDoc(cmd.OutOrStdout(), raw, o.json)
		},
	}
	rm := &cobra.Command{
		Use:               "rm NAME",
		ValidArgsFunction: completeModuleNames(&o, false),
		Short:             "remove a module (tasks already pinned to it keep running)",
		Args:              cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			if err := c.do(cmd.Context(), &client.Request{Method: http.MethodDelete, Path: "/v1/modules/" + url.PathEscape(args[0])}, nil); err != nil {
				return err
			}
			if !o.json {
				fmt.Fprintf(cmd.OutOrStdout(), "removed %s\n", args[0])
			}
			return nil
		},
	}
	cmd.AddCommand(list, get, rm)
	return cmd
}
