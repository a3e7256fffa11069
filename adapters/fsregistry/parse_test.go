package fsregistry

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
)

func TestParseFields(t *testing.T) {
	tests := []struct {
		name    string
		json    string
		check   func(t *testing.T, r domain.Record)
		warning string // part of the only warning; "" means none
	}{
		{"procStart as string", `{"pid":7,"procStart":"35646"}`, func(t *testing.T, r domain.Record) { assert.Equal(t, "35646", r.ProcStart) }, ""},
		{"procStart as number", `{"pid":7,"procStart":35646}`, func(t *testing.T, r domain.Record) { assert.Equal(t, "35646", r.ProcStart) }, ""},
		{"procStart text kept as written", `{"pid":7,"procStart":"035646"}`, func(t *testing.T, r domain.Record) { assert.Equal(t, "035646", r.ProcStart) }, ""},
		{"procStart null", `{"pid":7,"procStart":null}`, func(t *testing.T, r domain.Record) { assert.Empty(t, r.ProcStart) }, ""},
		{"pid as a string of digits (Claude Code 2.1.328 lists it too)", `{"pid":"7"}`, func(t *testing.T, r domain.Record) { assert.Equal(t, 7, r.PID) }, ""},
		{"unknown fields ignored", `{"pid":7,"peerFeatures":["a"],"asksForConvertedSkills":null,"future":{"x":1}}`, func(t *testing.T, r domain.Record) { assert.Equal(t, 7, r.PID) }, ""},
		{"null strings are absent", `{"pid":7,"name":null,"sessionId":null,"kind":null}`, func(t *testing.T, r domain.Record) {
			assert.Empty(t, r.Name)
			assert.Empty(t, r.SessionID)
			assert.Empty(t, r.Kind)
		}, ""},
		{"status words", `{"pid":7,"status":"busy"}`, func(t *testing.T, r domain.Record) { assert.Equal(t, domain.StatusBusy, r.Status) }, ""},
		// The record of a session stopped on a dialog, as Claude Code 2.1.332
		// writes it (its record writer: {status, waitingFor} with
		// updatedAt and statusUpdatedAt); 2.1.224 and 2.1.328 write the same.
		{"waiting, and on what", `{"pid":7,"status":"waiting","waitingFor":"dialog open","updatedAt":1796027533912,"statusUpdatedAt":1796027533912}`, func(t *testing.T, r domain.Record) {
			assert.Equal(t, domain.StatusWaiting, r.Status)
			assert.Equal(t, "dialog open", r.WaitingFor)
		}, ""},
		{"waiting on nothing said", `{"pid":7,"status":"waiting"}`, func(t *testing.T, r domain.Record) {
			assert.Equal(t, domain.StatusWaiting, r.Status)
			assert.Empty(t, r.WaitingFor)
		}, ""},
		{"waitingFor beside another status is not read", `{"pid":7,"status":"busy","waitingFor":"dialog open"}`, func(t *testing.T, r domain.Record) {
			assert.Equal(t, domain.StatusBusy, r.Status)
			assert.Empty(t, r.WaitingFor)
		}, ""},
		{"waitingFor not a string", `{"pid":7,"status":"waiting","waitingFor":{"agents":[]}}`, func(t *testing.T, r domain.Record) {
			assert.Equal(t, domain.StatusWaiting, r.Status)
			assert.Empty(t, r.WaitingFor)
		}, "field waitingFor is"},
		{"escapes after non-ASCII text are decoded", `{"pid":7,"name":"Bücher\u0020\"x\"","cwd":"/home/é\/w"}`, func(t *testing.T, r domain.Record) {
			assert.Equal(t, `Bücher "x"`, r.Name)
			assert.Equal(t, "/home/é/w", r.Cwd)
		}, ""},
		// Keys are read as Claude Code (JavaScript's JSON.parse) reads them:
		// exactly, the last duplicate winning, escapes decoded.
		{"a key in another case is another key", `{"pid":7,"name":"a","Name":"b","NAME":"c","sessionID":"x"}`, func(t *testing.T, r domain.Record) {
			assert.Equal(t, "a", r.Name)
			assert.Empty(t, r.SessionID)
		}, ""},
		{"pid in another case does not override", `{"pid":7,"Pid":8}`, func(t *testing.T, r domain.Record) { assert.Equal(t, 7, r.PID) }, ""},
		{"the last duplicate key wins", `{"pid":8,"name":"a","name":"b","pid":7}`, func(t *testing.T, r domain.Record) {
			assert.Equal(t, "b", r.Name)
			assert.Equal(t, 7, r.PID)
		}, ""},
		{"an escaped key counts as what it spells", `{"p\u0069d":7,"n\u0061me":"x"}`, func(t *testing.T, r domain.Record) { assert.Equal(t, "x", r.Name) }, ""},
		// Numbers as JavaScript reads them (Claude Code lists these records
		// live): by value, not by how they are written.
		{"pid written as a float", `{"pid":7.0}`, func(t *testing.T, r domain.Record) { assert.Equal(t, 7, r.PID) }, ""},
		{"pid with an exponent", `{"pid":5.76e2}`, func(t *testing.T, r domain.Record) { assert.Equal(t, 576, r.PID) }, ""},
		{"pid as a string with a leading zero", `{"pid":"0576"}`, func(t *testing.T, r domain.Record) { assert.Equal(t, 576, r.PID) }, ""},
		{"procStart number written as a float", `{"pid":7,"procStart":1497606.0}`, func(t *testing.T, r domain.Record) { assert.Equal(t, "1497606", r.ProcStart) }, ""},
		{"procStart number with an exponent", `{"pid":7,"procStart":1.497606e6}`, func(t *testing.T, r domain.Record) { assert.Equal(t, "1497606", r.ProcStart) }, ""},
		{"procStart negative zero", `{"pid":7,"procStart":-0}`, func(t *testing.T, r domain.Record) { assert.Equal(t, "0", r.ProcStart) }, ""},
		{"startedAt with an exponent", `{"pid":7,"startedAt":1.796029351446e12}`, func(t *testing.T, r domain.Record) {
			assert.Equal(t, int64(1796029351446), r.StartedAt.UnixMilli())
		}, ""},
		{"startedAt with a fraction of a millisecond", `{"pid":7,"startedAt":1796029351446.5}`, func(t *testing.T, r domain.Record) {
			assert.Equal(t, int64(1796029351446), r.StartedAt.UnixMilli())
		}, ""},
		{"peerProtocol written as a float", `{"pid":7,"peerProtocol":1.0}`, func(t *testing.T, r domain.Record) { assert.Equal(t, 1, r.PeerProtocol) }, ""},
		// A timestamp does not decide liveness; Claude Code lists the record
		// whatever it holds, so a bad one is ignored with a warning.
		{"updatedAt beyond float range", `{"pid":7,"updatedAt":1e400}`, func(t *testing.T, r domain.Record) { assert.True(t, r.UpdatedAt.IsZero()) }, "updatedAt 1e400 is not plausible epoch milliseconds"},
		{"startedAt a word", `{"pid":7,"startedAt":"today"}`, func(t *testing.T, r domain.Record) { assert.True(t, r.StartedAt.IsZero()) }, `field startedAt is "today", not a number; ignored`},
		{"startedAt a string of digits", `{"pid":7,"startedAt":"1796029351446"}`, func(t *testing.T, r domain.Record) {
			assert.Equal(t, int64(1796029351446), r.StartedAt.UnixMilli())
		}, ""},
		// Claude Code 2.1.328 checks procStartFt (a string) before procStart,
		// and compares a procStart only when it is a string.
		{"procStartFt is checked instead of procStart", `{"pid":7,"procStart":"100","procStartFt":"200"}`, func(t *testing.T, r domain.Record) {
			assert.Equal(t, "100", r.ProcStart, "procStart as written")
			start, field, _ := r.CheckedStart()
			assert.Equal(t, "200", start)
			assert.Equal(t, "procStartFt", field)
		}, ""},
		{"procStartFt not a string is ignored", `{"pid":7,"procStart":"100","procStartFt":200}`, func(t *testing.T, r domain.Record) {
			start, field, _ := r.CheckedStart()
			assert.Equal(t, "100", start)
			assert.Equal(t, "procStart", field)
			assert.False(t, r.ProcStartNumber)
		}, ""},
		{"procStart a number is marked", `{"pid":7,"procStart":100}`, func(t *testing.T, r domain.Record) { assert.True(t, r.ProcStartNumber) }, ""},
		{"empty procStart and procStartFt are values, not absent", `{"pid":7,"procStart":"","procStartFt":""}`, func(t *testing.T, r domain.Record) {
			assert.True(t, r.ProcStartEmpty)
			start, field, set := r.CheckedStart()
			assert.Equal(t, "", start)
			assert.Equal(t, "procStartFt", field)
			assert.True(t, set)
		}, ""},
		{"a BOM is skipped", "\xEF\xBB\xBF{\"pid\":7}", func(t *testing.T, r domain.Record) { assert.Equal(t, 7, r.PID) }, ""},
		{"empty parkedJobId parks", `{"pid":7,"parkedJobId":""}`, func(t *testing.T, r domain.Record) { assert.True(t, r.Parked()) }, ""},
		{"no procStart is not set", `{"pid":7}`, func(t *testing.T, r domain.Record) {
			_, _, set := r.CheckedStart()
			assert.False(t, set)
			assert.False(t, r.Parked())
		}, ""},
		{"parkedJobId", `{"pid":7,"parkedJobId":"job-1"}`, func(t *testing.T, r domain.Record) { assert.Equal(t, "job-1", r.ParkedJobID) }, ""},
		{"parkedJobId not a string is ignored", `{"pid":7,"parkedJobId":5}`, func(t *testing.T, r domain.Record) { assert.Empty(t, r.ParkedJobID) }, ""},
		{"unknown status word", `{"pid":7,"status":"thinking"}`, func(t *testing.T, r domain.Record) { assert.Equal(t, domain.StatusUnknown, r.Status) }, ""},
		// Claude Code 2.1.328's own listing keeps such a record and drops the
		// field; so do we, with a warning (measured by the oracle test).
		{"name of the wrong type is ignored", `{"pid":7,"name":5}`, func(t *testing.T, r domain.Record) { assert.Empty(t, r.Name) }, "field name is 5, not a string; ignored"},
		{"sessionId of the wrong type is ignored", `{"pid":7,"sessionId":{"a":1}}`, func(t *testing.T, r domain.Record) { assert.Empty(t, r.SessionID) }, `field sessionId is {"a":1}, not a string; ignored`},
		{"kind of the wrong type is ignored", `{"pid":7,"kind":true}`, func(t *testing.T, r domain.Record) { assert.Empty(t, r.Kind) }, "field kind is true"},
		{"socket path of the wrong type is ignored", `{"pid":7,"messagingSocketPath":["/s"]}`, func(t *testing.T, r domain.Record) { assert.Empty(t, r.SocketPath) }, "field messagingSocketPath"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Parse([]byte(tt.json))
			require.NoError(t, err)
			tt.check(t, r)
			if tt.warning == "" {
				assert.Empty(t, r.Warnings)
			} else {
				require.Len(t, r.Warnings, 1)
				assert.Contains(t, r.Warnings[0], tt.warning)
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	tests := []struct{ name, json, err string }{
		{"empty", ``, "not a JSON record"},
		{"null", `null`, "not a JSON record: JSON null, not an object"},
		{"array holding a record", `[{"pid":7}]`, "not a JSON record: a JSON array, not an object"},
		// Claude Code (JSON.parse) reads keys exactly: "PID" is not "pid".
		{"pid in another case", `{"PID":7}`, "required field pid is missing"},
		{"array", `[]`, "not a JSON record"},
		{"no pid", `{"sessionId":"s"}`, "required field pid is missing"},
		{"pid 0", `{"pid":0}`, "pid 0 is not a positive process id"},
		{"pid negative", `{"pid":-3}`, "pid -3 is not a positive process id"},
		{"pid too big", `{"pid":4294967296}`, "is not a positive process id"},
		{"pid fraction", `{"pid":7.5}`, "field pid is 7.5, not a whole number"},
		{"pid bool", `{"pid":true}`, "field pid is true, not a number"},
		{"pid word", `{"pid":"seven"}`, "not a number"},
		{"procStart bool", `{"pid":7,"procStart":true}`, "field procStart is true, not a string or number"},
		{"procStart object", `{"pid":7,"procStart":{}}`, "not a string or number"},
		{"trailing garbage", `{"pid":7} x`, "trailing data"},
		{"second object", `{"pid":7}{"pid":8}`, "trailing data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.json))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.err)
		})
	}
}
