package jqfilter

import (
	"context"
	"errors"
	"math"
	"math/big"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// results runs expr on v and returns every result and the error.
func results(t *testing.T, expr string, v any) ([]any, error) {
	t.Helper()
	filter, err := Compile(expr)
	require.NoError(t, err, expr)
	var out []any
	err = filter(context.Background(), v, func(r any) error { out = append(out, r); return nil })
	return out, err
}

// The filter sees v as its JSON document reads: field names as JSON has
// them, whole numbers as int (every digit kept, beyond int as *big.Int),
// the rest as float64.
func TestFilterSeesTheJSONDocument(t *testing.T) {
	type doc struct {
		Name  string  `json:"name"`
		ID    uint64  `json:"id"`
		Ratio float64 `json:"ratio"`
		Tags  []string
	}
	out, err := results(t, ".name, .id, .ratio, .Tags, (.id | type)", doc{Name: "alpha", ID: 18446744073709551615, Ratio: 0.5, Tags: []string{"a"}})
	require.NoError(t, err)
	huge, _ := new(big.Int).SetString("18446744073709551615", 10)
	assert.Equal(t, []any{"alpha", huge, 0.5, []any{"a"}, "number"}, out)

	out, err = results(t, ".[] | .pid", []map[string]int{{"pid": 4242}})
	require.NoError(t, err)
	assert.Equal(t, []any{4242}, out)
}

// A bad expression is an error in gojq's words; nothing runs.
func TestCompileRefusesABadExpression(t *testing.T) {
	for _, expr := range []string{".[", "nosuchfunction", "{"} {
		_, err := Compile(expr)
		assert.Error(t, err, expr)
	}
}

// An error of the expression on v comes after the results before it;
// halt ends with none, halt_error with its message.
func TestFilterErrorsAndHalt(t *testing.T) {
	out, err := results(t, `1, (.foo | error("boom")), 2`, map[string]any{"foo": 1})
	assert.Equal(t, []any{1}, out)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "boom")

	out, err = results(t, ".[0].foo", map[string]any{})
	assert.Empty(t, out)
	assert.Error(t, err, "an object cannot be indexed by a number")

	out, err = results(t, "1, halt, 2", nil)
	assert.NoError(t, err)
	assert.Equal(t, []any{1}, out)

	_, err = results(t, `"stop\n" | halt_error`, nil)
	assert.Error(t, err)
}

// emit's error ends the run and is returned as it is.
func TestFilterReturnsEmitsError(t *testing.T) {
	filter, err := Compile(".[]")
	require.NoError(t, err)
	stop := errors.New("write /dev/stdout: broken pipe")
	n := 0
	err = filter(context.Background(), []int{1, 2, 3}, func(any) error { n++; return stop })
	assert.Same(t, stop, err)
	assert.Equal(t, 1, n)
}

// An expression that never ends ends when its context is done (Ctrl-C,
// SIGTERM, SIGHUP cancel the command's context), with the context's error.
func TestFilterEndsWithItsContext(t *testing.T) {
	filter, err := Compile("def f: f; f")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = filter(ctx, nil, func(any) error { return nil })
	assert.ErrorIs(t, err, context.Canceled)
}

// env and $ENV are the process environment, as jq's and gh's.
func TestFilterSeesTheEnvironment(t *testing.T) {
	t.Setenv("PEERCTL_JQ_TEST", "seen")
	out, err := results(t, "env.PEERCTL_JQ_TEST, $ENV.PEERCTL_JQ_TEST", nil)
	require.NoError(t, err)
	assert.Equal(t, []any{"seen", "seen"}, out)
}

// halt_error's error has its value and exit code: 5 unless given.
func TestHaltErrorHasValueAndCode(t *testing.T) {
	for expr, code := range map[string]int{`"bye\n" | halt_error`: 5, `{"a":1} | halt_error(3)`: 3} {
		_, err := results(t, expr, nil)
		var h Halt
		require.ErrorAs(t, err, &h, expr)
		assert.Equal(t, code, h.ExitCode(), expr)
	}
	_, err := results(t, `error("boom")`, nil)
	assert.NotErrorAs(t, err, new(Halt), "error is no halt")
}

// NaN and the infinities come out as jq 1.7 prints them: null and the
// largest float64 of their sign.
func TestNaNAndInfinityAreJSON(t *testing.T) {
	out, err := results(t, "nan, infinite, -infinite, [nan]", nil)
	require.NoError(t, err)
	assert.Equal(t, []any{nil, math.MaxFloat64, -math.MaxFloat64, []any{nil}}, out)
}
