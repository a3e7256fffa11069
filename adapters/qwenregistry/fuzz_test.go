package qwenregistry

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

const fuzzToken = "f00dfeedf00dfeedf00dfeedf00dfeedf00dfeedf00dfeedf00dfeedf00dfeed"

// FuzzParse: any bytes parse without panic, and neither the error nor the
// Token's printed forms contain the token's value, however the record is
// broken around it (other fields may hold the same text legitimately).
func FuzzParse(f *testing.F) {
	f.Add(`{"schemaVersion":1,"pid":4242,"procStart":"b:1","pidNs":1,"sessionId":"s","cwd":"/w","name":"w-3b","startedAt":1796142262298,"qwenVersion":"0.24.4","kind":"tui","ipcPath":"/q.sock","ipcToken":"TOKEN"}`)
	f.Add(`{"schemaVersion":2,"ipcToken":"TOKEN"}`)
	f.Add(`{"schemaVersion":1,"pid":"TOKEN"}`)
	f.Add(`{"schemaVersion":1,"ipcToken":"TOKEN",`)
	f.Add(`{"schemaVersion":1,"ipcToken":"TOKEN"} trailing`)
	f.Add(`{"schemaVersion":1,"pid":1,"sessionId":"s","pidNs":"TOKEN"}`)
	f.Fuzz(func(t *testing.T, in string) {
		data := []byte(strings.ReplaceAll(in, "TOKEN", fuzzToken))
		_, tok, err := parse(data)
		out := fmt.Sprintf("%v %+v %#v %s %q %x %v", tok, tok, tok, tok, tok, tok, err)
		b, _ := json.Marshal(tok)
		out += string(b)
		if strings.Contains(out, fuzzToken) || strings.Contains(out, fuzzToken[:16]) {
			t.Fatalf("the token leaked: %s", out)
		}
	})
}
