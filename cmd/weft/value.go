package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/weft-run/weft/codec"
)

// maxValueInput bounds what `weft value` reads from stdin: the base64
// envelope or projection of a frame at the codec's default size limit, with
// room to spare.
var maxValueInput = 4 * codec.DefaultLimits.MaxSize

func newValueCmd() *cobra.Command {
	value := &cobra.Command{
		Use:   "value",
		Short: "convert between JSON values and Avro Value payload envelopes",
		Long: "value converts between the typed JSON projection of a durable value and its\n" +
			`{"codec":"avro","blob":…} envelope (Avro Value protocol). Failures exit with` + "\n" +
			"status 1 and print <code>: <explanation> on stderr.",
	}
	value.AddCommand(newValueEncodeCmd(), newValueDecodeCmd())
	return value
}

func newValueEncodeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "encode",
		Short: "read one JSON value on stdin and print its avro envelope",
		Long: "encode reads one JSON value on stdin in the typed projection and prints its\n" +
			`{"codec":"avro","blob":…} envelope. Integers become longs, numbers with a` + "\n" +
			`fraction or exponent doubles; {"$type":"bytes","base64":…} is bytes and` + "\n" +
			`{"$type":"map","entries":[{"key":…,"value":…}]} a map with any keys.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			data, err := readValueInput(cmd.InOrStdin())
			if err != nil {
				return err
			}
			v, err := codec.ParseProjection(data)
			if err != nil {
				return err
			}
			env, err := codec.EncodeEnvelope(v)
			if err != nil {
				return err
			}
			out, err := env.MarshalJSON()
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s\n", out)
			return err
		},
	}
}

func newValueDecodeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "decode",
		Short: "read an avro envelope on stdin and print its typed JSON projection",
		Long: `decode reads a {"codec":"avro","blob":…} envelope on stdin, checks the codec tag,` + "\n" +
			"the frame and the datum, and prints the value's typed JSON projection. Piping\n" +
			"the output to `weft value encode` gives back the same envelope.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			data, err := readValueInput(cmd.InOrStdin())
			if err != nil {
				return err
			}
			env, err := codec.ParseEnvelope(data)
			if err != nil {
				return err
			}
			v, err := codec.DecodeEnvelope(env)
			if err != nil {
				return err
			}
			out, err := codec.MarshalProjection(v)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s\n", out)
			return err
		},
	}
}

// readValueInput reads stdin up to maxValueInput bytes.
func readValueInput(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, int64(maxValueInput)+1))
	if err != nil {
		return nil, fmt.Errorf("read stdin: %w", err)
	}
	if len(data) > maxValueInput {
		return nil, &codec.Error{Code: codec.CodePayloadLimit, Message: fmt.Sprintf("input exceeds the limit of %d bytes", maxValueInput)}
	}
	return data, nil
}
