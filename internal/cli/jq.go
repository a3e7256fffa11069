package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"strconv"

	"github.com/itchyny/gojq"
	"github.com/spf13/cobra"

	"github.com/peerctl/peerctl/ports/wire"
)

// jqFlag is --jq, on every command that has --json (addJQFlags): gh's flag
// of the same name and shorthand, -q.
const jqFlag = "jq"

// outputFlag is --output (-o), hidden: "json" is --json.
const outputFlag = "output"

// addJQFlags gives every command of the tree under cmd that has --json a
// --jq EXPR (-q EXPR) flag, whose value lands in s.jqExpr: one place, so
// that a new --json command has it too.
func (s *iostreams) addJQFlags(cmd *cobra.Command) {
	if cmd.Flags().Lookup("json") != nil {
		cmd.Flags().StringVarP(&s.jqExpr, jqFlag, "q", "", "filter with jq's `EXPR` (implies --json)")
		// -o json, --output json: kubectl's and others' spelling of --json,
		// taken and not shown.
		cmd.Flags().StringVarP(&s.outputFormat, outputFlag, "o", "", "")
		_ = cmd.Flags().MarkHidden(outputFlag)
	}
	for _, sub := range cmd.Commands() {
		s.addJQFlags(sub)
	}
}

// useJQ is run before every command: with --jq given it compiles the
// expression (a bad one is a usage error that names it) and sets --json,
// which --jq implies; -o json (--output json) sets --json too, any other
// format is a usage error.
func (s *iostreams) useJQ(cmd *cobra.Command) error {
	if f := cmd.Flags().Lookup(outputFlag); f != nil && f.Changed {
		if s.outputFormat != "json" {
			return usageError{fmt.Errorf("--output %q: only json is an output format (tables are for people; --json, --jq EXPR for scripts)", s.outputFormat)}
		}
		if err := cmd.Flags().Set("json", "true"); err != nil {
			return err
		}
	}
	f := cmd.Flags().Lookup(jqFlag)
	if f == nil || !f.Changed {
		return nil
	}
	q, err := gojq.Parse(s.jqExpr)
	if err == nil {
		s.jq, err = gojq.Compile(q)
	}
	if err != nil {
		return usageError{fmt.Errorf("--jq %q: %v", s.jqExpr, err)}
	}
	return cmd.Flags().Set("json", "true")
}

// writeJQ prints what code makes of v, v as its JSON document reads (the
// same value --json prints): one line per result, a string raw (a
// character that is not printable escaped, as in a message's text: see
// safeText), anything else as compact JSON. An error of the expression
// on v is returned after the results before it.
func writeJQ(w io.Writer, code *gojq.Code, v any) error {
	doc, err := jqValue(v)
	if err != nil {
		return err
	}
	iter := code.Run(doc)
	for {
		out, ok := iter.Next()
		if !ok {
			return nil
		}
		if err, ok := out.(error); ok {
			var halt *gojq.HaltError
			if errors.As(err, &halt) && halt.Value() == nil {
				return nil
			}
			return fmt.Errorf("--jq: %v", err)
		}
		if s, ok := out.(string); ok {
			if _, err := fmt.Fprintln(w, safeText(s)); err != nil {
				return err
			}
			continue
		}
		if err := wire.EncodeJSON(w, out, "", false); err != nil {
			return err
		}
	}
}

// jqValue is v as gojq takes it: v's JSON decoded into maps, slices,
// strings, bools and nil, whole numbers as int (or *big.Int beyond int),
// the rest as float64 -- so that an id or a byte count keeps every digit.
func jqValue(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	return numbers(doc), nil
}

// numbers replaces every json.Number in v by an int, a *big.Int or a float64.
func numbers(v any) any {
	switch t := v.(type) {
	case json.Number:
		if i, err := strconv.Atoi(t.String()); err == nil {
			return i
		}
		if b, ok := new(big.Int).SetString(t.String(), 10); ok {
			return b
		}
		f, _ := t.Float64()
		return f
	case []any:
		for i := range t {
			t[i] = numbers(t[i])
		}
	case map[string]any:
		for k := range t {
			t[k] = numbers(t[k])
		}
	}
	return v
}
