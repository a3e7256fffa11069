//go:build unix

package livecodex

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// post sends one Responses request body to m and returns the item of its
// response.output_item.done event, checking the three events' order.
func post(t *testing.T, m *Model, body string) map[string]any {
	t.Helper()
	resp, err := http.Post(m.URL+"/responses", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	var types []string
	var item map[string]any
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type string         `json:"type"`
			Item map[string]any `json:"item"`
		}
		require.NoError(t, json.Unmarshal([]byte(data), &ev))
		types = append(types, ev.Type)
		if ev.Item != nil {
			item = ev.Item
		}
	}
	assert.Equal(t, []string{"response.created", "response.output_item.done", "response.completed"}, types)
	return item
}

func user(text string) string {
	raw, _ := json.Marshal(text)
	return `{"type":"message","role":"user","content":[{"type":"input_text","text":` + string(raw) + `}]}`
}

func text(item map[string]any) string {
	c, _ := item["content"].([]any)
	if len(c) == 0 {
		return ""
	}
	s, _ := c[0].(map[string]any)["text"].(string)
	return s
}

func TestDefaultScript(t *testing.T) {
	m := StartModel(t, nil)
	tools := `"tools":[{"type":"function","name":"exec_command"},{"type":"namespace","name":"mcp__peerctl","tools":[{"type":"function","name":"send_message"}]}]`

	t.Run("title", func(t *testing.T) {
		item := post(t, m, `{"input":[`+user("Generate a concise, single-line task title of at most 36 characters")+`],"tools":[]}`)
		assert.Equal(t, TitleReply, text(item))
	})
	t.Run("ping, the last one, inside an envelope", func(t *testing.T) {
		item := post(t, m, `{"input":[`+user("<environment_context/>")+`,`+user("from x:\nping one and ping two-3\n")+`],`+tools+`}`)
		assert.Equal(t, "message", item["type"])
		assert.Equal(t, "pong: ping two-3", text(item))
	})
	t.Run("anything else", func(t *testing.T) {
		assert.Equal(t, "ok", text(post(t, m, `{"input":[`+user("hello")+`],`+tools+`}`)))
	})
	t.Run("a function in a namespace", func(t *testing.T) {
		item := post(t, m, `{"input":[`+user(`call send_message {"to":"a","text":"b"}`)+`],`+tools+`}`)
		assert.Equal(t, "function_call", item["type"])
		assert.Equal(t, "send_message", item["name"])
		assert.Equal(t, "mcp__peerctl", item["namespace"])
		assert.JSONEq(t, `{"to":"a","text":"b"}`, item["arguments"].(string))
	})
	t.Run("a top-level function, and one not offered", func(t *testing.T) {
		item := post(t, m, `{"input":[`+user(`call exec_command {}`)+`],`+tools+`}`)
		assert.Equal(t, "exec_command", item["name"])
		assert.Nil(t, item["namespace"])
		assert.Equal(t, "no tool nope", text(post(t, m, `{"input":[`+user(`call nope {}`)+`],`+tools+`}`)))
	})
	t.Run("after the function's output", func(t *testing.T) {
		item := post(t, m, `{"input":[`+user(`call exec_command {}`)+`,{"type":"function_call","call_id":"c1","name":"exec_command","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"done"}],`+tools+`}`)
		assert.Equal(t, "tool said: done", text(item))
	})
	t.Run("a held turn answers once released", func(t *testing.T) {
		got := make(chan string, 1)
		go func() { got <- text(post(t, m, `{"input":[`+user("hold g")+`],`+tools+`}`)) }()
		for !m.Held("g") {
			time.Sleep(time.Millisecond)
		}
		select {
		case s := <-got:
			t.Fatalf("answered before the release: %q", s)
		default:
		}
		m.Release("g")
		assert.Equal(t, "held g", <-got)
	})
	t.Run("what is not a Responses request is a problem", func(t *testing.T) {
		resp, err := http.Post(m.URL+"/responses", "application/json", strings.NewReader("not json"))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
		assert.Len(t, m.Problems(), 1)
		m.mu.Lock()
		m.problems = nil // read, so that the clean-up does not report it
		m.mu.Unlock()
	})
}
