package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/weft-run/weft/runtime/httpapi/client"
)

// completionTimeout bounds the daemon lookups of shell completion, so that
// a Tab press never hangs on an unreachable daemon.
const completionTimeout = 2 * time.Second

// completeTaskIDs completes the first argument with the ids of the newest
// tasks the client may see, described by module, function and status.
func completeTaskIDs(o *clientOptions) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var page struct {
			Data []client.Task `json:"data"`
		}
		if !completionFetch(cmd, o, "/v1/tasks?limit=100", &page) {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		for _, t := range page.Data {
			if strings.HasPrefix(t.ID, toComplete) {
				out = append(out, cobra.CompletionWithDesc(t.ID, t.Module+"."+t.Function+" "+t.Status))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeModuleNames completes the first argument with the names of the
// deployed modules and, when functions is set, the second with the
// functions of the module named first.
func completeModuleNames(o *clientOptions, functions bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 1 || (len(args) == 1 && !functions) {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var page struct {
			Data []client.Module `json:"data"`
		}
		if !completionFetch(cmd, o, "/v1/modules", &page) {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		for _, m := range page.Data {
			if len(args) == 0 {
				if strings.HasPrefix(m.Name, toComplete) {
					out = append(out, cobra.CompletionWithDesc(m.Name, m.Digest))
				}
				continue
			}
			if m.Name != args[0] {
				continue
			}
			for _, f := range m.Functions {
				if strings.HasPrefix(f.Name, toComplete) {
					out = append(out, cobra.CompletionWithDesc(f.Name, f.Kind))
				}
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completionFetch reads path from the daemon into out; any failure gives
// no completions rather than an error on the user's terminal.
func completionFetch(cmd *cobra.Command, o *clientOptions, path string, out any) bool {
	c, err := o.client()
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
	defer cancel()
	var raw json.RawMessage
	if err := c.do(ctx, &client.Request{Method: http.MethodGet, Path: path}, &raw); err != nil {
		return false
	}
	return json.Unmarshal(raw, out) == nil
}
