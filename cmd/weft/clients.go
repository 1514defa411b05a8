package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/weft-run/weft/runtime/httpapi/client"
)

func newClientsCmd() *cobra.Command {
	var o clientOptions
	cmd := &cobra.Command{Use: "clients", Short: "pair, list and revoke API clients"}
	addClientFlags(cmd, &o)

	var scopes []string
	var ttl, name string
	var redeem bool
	pair := &cobra.Command{
		Use:   "pair",
		Short: "create a one-time pairing code (admin); with --redeem CODE --name N, exchange it for a token",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if redeem {
				if len(args) != 1 || name == "" {
					return usageError{fmt.Errorf("--redeem needs the code as argument and --name")}
				}
				body, err := jsonBody(map[string]any{"code": args[0], "name": name})
				if err != nil {
					return err
				}
				var raw json.RawMessage
				if err := c.do(cmd.Context(), &client.Request{Method: http.MethodPost, Path: "/v1/pair", Body: body}, &raw); err != nil {
					return err
				}
				return printDoc(out, raw, o.json)
			}
			if len(args) != 0 {
				return usageError{fmt.Errorf("unexpected argument %q (did you mean --redeem?)", args[0])}
			}
			d, err := parseDuration(ttl)
			if err != nil {
				return err
			}
			req := map[string]any{"scopes": scopes}
			if d > 0 {
				req["ttl_seconds"] = int64(d.Seconds())
			}
			body, err := jsonBody(req)
			if err != nil {
				return err
			}
			var raw json.RawMessage
			if err := c.do(cmd.Context(), &client.Request{Method: http.MethodPost, Path: "/v1/pairings", Body: body}, &raw); err != nil {
				return err
			}
			if o.json {
				return printDoc(out, raw, true)
			}
			var p client.Pairing
			if err := json.Unmarshal(raw, &p); err != nil {
				return fmt.Errorf("decode pairing: %w", err)
			}
			fmt.Fprintf(out, "pairing code %s (scopes %s, expires %s)\n", p.Code, strings.Join(p.Scopes, ","), rfc3339(p.ExpiresAt))
			fmt.Fprintf(out, "redeem it with: weft clients pair --redeem %s --name NAME\n", p.Code)
			return nil
		},
	}
	pair.Flags().StringSliceVar(&scopes, "scope", []string{"tasks:read", "tasks:write", "modules:read"}, "scopes granted to the new client (repeatable)")
	pair.Flags().StringVar(&ttl, "expires-in", "", "how long the code stays valid, e.g. 10m")
	pair.Flags().BoolVar(&redeem, "redeem", false, "exchange CODE for a client token")
	pair.Flags().StringVar(&name, "name", "", "name of the new client (with --redeem)")

	list := &cobra.Command{
		Use:   "list",
		Short: "list paired clients",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			raw, err := o.fetch(cmd, &client.Request{Method: http.MethodGet, Path: "/v1/clients"})
			if err != nil {
				return err
			}
			if o.json {
				return printDoc(cmd.OutOrStdout(), raw, true)
			}
			var page client.List[client.PairedClient]
			if err := json.Unmarshal(raw, &page); err != nil {
				return fmt.Errorf("decode client list: %w", err)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tSCOPES\tCREATED\tREVOKED")
			for _, cl := range page.Data {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", cl.ID, cl.Name, strings.Join(cl.Scopes, ","), rfc3339(cl.CreatedAt), rfc3339p(cl.RevokedAt))
			}
			return tw.Flush()
		},
	}
	revoke := &cobra.Command{
		Use:   "revoke CLIENT_ID",
		Short: "revoke a client's token; it fails from the next request on",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			if err := c.do(cmd.Context(), &client.Request{Method: http.MethodDelete, Path: "/v1/clients/" + url.PathEscape(args[0])}, nil); err != nil {
				return err
			}
			if !o.json {
				fmt.Fprintf(cmd.OutOrStdout(), "revoked %s\n", args[0])
			}
			return nil
		},
	}
	cmd.AddCommand(pair, list, revoke)
	return cmd
}
