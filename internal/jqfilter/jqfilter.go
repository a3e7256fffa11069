// Package jqfilter is the jq filter of --jq EXPR: a jq expression parsed
// and compiled by gojq (github.com/itchyny/gojq, the jq implementation gh
// links for its --jq), run on the document a --json command prints.
//
// Only peerctl-mcp links it (cmd/peerctl-mcp hands Compile to cli.Main):
// gojq's package initialisation builds its builtin table (219 KB, 2,278
// allocations) at every start of every command, about a tenth of a `list`
// (docs/PERFORMANCE.md). peerctl, without it, runs a command line with
// --jq as peerctl-mcp.
package jqfilter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"os"
	"strconv"

	"github.com/itchyny/gojq"
)

// Compile parses and compiles the jq expression expr into a filter, or
// returns gojq's error for a bad expression (a syntax error, an unknown
// function), in its words. `env` and `$ENV` are the process environment,
// as jq's and gh's. The filter runs expr on v as v's JSON document reads
// (the same value --json prints) and hands each result to emit in turn: a
// string, an int, a *big.Int, a float64 (never NaN or infinite: NaN is
// nil, an infinity the largest float64 of its sign, as jq 1.7 prints
// them), a bool, nil, an []any or a map[string]any. It returns emit's
// first error as it is, ctx's error once ctx is done (an expression that
// never ends ends then), and the first error of expr on v (after the
// results before it) in gojq's words; `halt` ends it with no error, as
// jq's does, and halt_error with a Halt.
func Compile(expr string) (func(ctx context.Context, v any, emit func(any) error) error, error) {
	q, err := gojq.Parse(expr)
	if err != nil {
		return nil, err
	}
	code, err := gojq.Compile(q, gojq.WithEnvironLoader(os.Environ))
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, v any, emit func(any) error) error { return run(ctx, code, v, emit) }, nil
}

// run is Compile's filter: code run on v, each result handed to emit.
func run(ctx context.Context, code *gojq.Code, v any, emit func(any) error) error {
	doc, err := value(v)
	if err != nil {
		return err
	}
	iter := code.RunWithContext(ctx, doc)
	for {
		out, ok := iter.Next()
		if !ok {
			return nil
		}
		if err, ok := out.(error); ok {
			var halt *gojq.HaltError
			if errors.As(err, &halt) {
				if halt.Value() == nil {
					return nil
				}
				return Halt{halt}
			}
			return err
		}
		if err := emit(finite(out)); err != nil {
			return err
		}
	}
}

// Halt is the error of jq's halt_error: Value is what to print on stderr
// (a string raw, anything else as JSON), ExitCode the exit code (5 unless
// halt_error was given one).
type Halt struct{ err *gojq.HaltError }

func (h Halt) Error() string { return h.err.Error() }

// Value is halt_error's input.
func (h Halt) Value() any { return h.err.Value() }

// ExitCode is halt_error's code: its argument, 5 without one.
func (h Halt) ExitCode() int { return h.err.ExitCode() }

// Halted marks a Halt apart from error's errors, which have a Value and
// an ExitCode too.
func (Halt) Halted() {}

// finite is v with every NaN replaced by nil and every infinity by the
// largest float64 of its sign, as jq 1.7 prints them (JSON has neither).
func finite(v any) any {
	return leaves(v, func(v any) any {
		f, ok := v.(float64)
		switch {
		case !ok:
		case math.IsNaN(f):
			return nil
		case math.IsInf(f, 0):
			return math.Copysign(math.MaxFloat64, f)
		}
		return v
	})
}

// leaves is v with each value that is neither an []any nor a
// map[string]any, at any depth, replaced by what leaf makes of it (in
// place).
func leaves(v any, leaf func(any) any) any {
	switch t := v.(type) {
	case []any:
		for i := range t {
			t[i] = leaves(t[i], leaf)
		}
	case map[string]any:
		for k := range t {
			t[k] = leaves(t[k], leaf)
		}
	default:
		return leaf(v)
	}
	return v
}

// value is v as gojq takes it: v's JSON decoded into maps, slices,
// strings, bools and nil, whole numbers as int (or *big.Int beyond int),
// the rest as float64 -- so that an id or a byte count keeps every digit.
func value(v any) (any, error) {
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
	return leaves(v, func(v any) any {
		n, ok := v.(json.Number)
		if !ok {
			return v
		}
		if i, err := strconv.Atoi(n.String()); err == nil {
			return i
		}
		if b, ok := new(big.Int).SetString(n.String(), 10); ok {
			return b
		}
		f, _ := n.Float64()
		return f
	})
}
