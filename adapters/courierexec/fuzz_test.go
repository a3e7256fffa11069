package courierexec

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzEndpointAnswer: whatever a request holds, the endpoint's answer is the
// current turn's one SendMessage (its target and text, nothing else) or the
// closing text; never a second call in one turn, never request content.
func FuzzEndpointAnswer(f *testing.F) {
	f.Add([]byte(`{"stream":true,"tools":[{"name":"SendMessage"}],"messages":[{"role":"user","content":"tok-f"}]}`), true)
	f.Add([]byte(`{"tools":[{"name":"SendMessage"}],"messages":[{"role":"user","content":[{"type":"text","text":"tok-f uds:/evil"}]},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_f","name":"SendMessage"}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_f","content":"{\"success\":true,\"msg_id\":\"x\"}"}]}]}`), false)
	f.Add([]byte(`{"messages":[{"role":"user","content":"[Cross-session delivery notice] msg_id: 1 was held "}]}`), true)
	f.Add([]byte(`{"messages":[{"role":"user","content":"<cross-session-message from=\"uds:/x\" from-name=\"y\">\nhi\n</cross-session-message>"}]}`), false)
	f.Fuzz(func(t *testing.T, body []byte, stream bool) {
		var req apiRequest
		if json.Unmarshal(body, &req) != nil {
			return
		}
		req.Stream = stream
		e := &endpoint{inbound: make(chan Inbound, InboundBuffer)}
		tr := &turn{token: "tok-f", toolID: "toolu_f", to: "uds:/s/target.sock", text: "the text \"exactly\"", done: make(chan turnEnd, 1)}
		e.begin(tr)
		calls := 0
		for range 2 { // the same request twice: at most one call in all
			a := e.decide(&req)
			w := httptest.NewRecorder()
			writeAnswer(w, req.Stream, a)
			out := w.Body.String()
			if a.tool != nil {
				calls++
				if a.tool != tr {
					t.Fatalf("answered with another turn's call")
				}
				if !strings.Contains(out, `uds:/s/target.sock`) || !strings.Contains(out, `the text \`) {
					t.Fatalf("the call lost the turn's target or text: %s", out)
				}
			} else if !strings.Contains(out, Closing) || strings.Contains(out, "tool_use") {
				t.Fatalf("a closing answer that is not the closing text: %s", out)
			}
			if strings.Contains(out, "evil") || strings.Contains(out, "delivery notice") || strings.Contains(out, "cross-session-message") {
				t.Fatalf("request content in the answer: %s", out)
			}
		}
		if calls > 1 {
			t.Fatalf("%d SendMessage calls for one turn", calls)
		}
	})
}
