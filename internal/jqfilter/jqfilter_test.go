package jqfilter

import (
	"errors"
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
	err = filter(v, func(r any) error { out = append(out, r); return nil })
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
	err = filter([]int{1, 2, 3}, func(any) error { n++; return stop })
	assert.Same(t, stop, err)
	assert.Equal(t, 1, n)
}
