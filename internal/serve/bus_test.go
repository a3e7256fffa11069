package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/internal/wiring"
)

// fakeCarrier answers every request with answer or err, and remembers
// what it carried and how long it was given.
type fakeCarrier struct {
	answer []byte
	err    error
	to     string
	got    []byte
	budget time.Duration
}

func (f *fakeCarrier) Carry(ctx context.Context, to string, request []byte) ([]byte, error) {
	f.to, f.got = to, request
	if d, ok := ctx.Deadline(); ok {
		f.budget = time.Until(d)
	}
	return f.answer, f.err
}

func busRequest(t *testing.T, r wiring.BusRequest) []byte {
	t.Helper()
	b, err := json.Marshal(r)
	require.NoError(t, err)
	return b
}

func TestServeBusCarriesTheRequestAndItsAnswerAsTheyAre(t *testing.T) {
	answer := []byte(`{"v":1,"version":"v0.9.0","code":0,"doc":{"ok":true},"stderr":[]}`)
	fc := &fakeCarrier{answer: answer}
	link := NewBusLink("alpha", "nats://127.0.0.1:4222")
	s := newServer(t.Context(), Options{Bus: link})
	assert.Equal(t, &BusStatus{Node: "alpha", Servers: "nats://127.0.0.1:4222"}, s.status().Bus, "not on the bus yet")

	req := busRequest(t, wiring.BusRequest{V: wiring.BusRequestVersion, Op: "list", Budget: 2 * time.Hour})
	a := s.Serve(t.Context(), Request{V: Protocol, Op: "bus", Bus: "nats://127.0.0.1:4222", Node: "beta.lan", Carry: req}, nil)
	assert.Equal(t, BusNotSent, a.BusFault, "no connection yet")
	assert.Contains(t, string(a.Error), "this service (node alpha) is not on the fleet's bus now")
	assert.Nil(t, fc.got)

	link.Set(fc)
	assert.True(t, s.status().Bus.OnBus)
	a = s.Serve(t.Context(), Request{V: Protocol, Op: "bus", Bus: "nats://127.0.0.1:4222", Node: "beta.lan", Carry: req}, nil)
	assert.True(t, a.Done)
	assert.Empty(t, a.BusFault)
	assert.Equal(t, answer, a.Bus, "the node's answer, as it came")
	assert.Equal(t, "beta.lan", fc.to)
	assert.Equal(t, []byte(req), fc.got, "the request, as it came")
	assert.LessOrEqual(t, fc.budget, maxBusBudget, "at most an hour, whatever the caller said")
	assert.Greater(t, fc.budget, 59*time.Minute)
}

func TestServeBusRefusesWhatItCannotCarry(t *testing.T) {
	good := busRequest(t, wiring.BusRequest{V: wiring.BusRequestVersion, Op: "doctor", Budget: time.Minute})
	for _, tc := range []struct {
		name    string
		link    bool
		servers string
		node    string
		bus     []byte
		want    string
	}{
		{"no bus", false, "nats://x:4222", "beta", good, "on no fleet's bus"},
		{"another bus", true, "nats://y:4222", "beta", good, "not nats://y:4222"},
		{"bad node", true, "nats://x:4222", "beta..lan", good, `node "beta..lan"`},
		{"no node", true, " nats://x:4222 ", "", good, `node ""`},
		{"no request", true, "nats://x:4222", "beta", nil, "a bus request that is none"},
		{"unknown key", true, "nats://x:4222", "beta", []byte(`{"v":1,"op":"list","budget":1,"argv":["sh"]}`), "a bus request that is none"},
		{"another version", true, "nats://x:4222", "beta", []byte(`{"v":2,"op":"list","budget":1}`), "version 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := &fakeCarrier{answer: []byte(`{}`)}
			o := Options{}
			if tc.link {
				o.Bus = NewBusLink("alpha", "nats://x:4222")
				o.Bus.Set(fc)
			}
			a := newServer(t.Context(), o).Serve(t.Context(), Request{V: Protocol, Op: "bus", Bus: tc.servers, Node: tc.node, Carry: tc.bus}, nil)
			assert.True(t, a.Done)
			assert.Equal(t, BusNotSent, a.BusFault)
			assert.Contains(t, string(a.Error), tc.want)
			assert.Nil(t, a.Bus)
			assert.Nil(t, fc.got, "nothing was carried")
		})
	}
}

func TestServeBusBoundsWhatComesBack(t *testing.T) {
	req := busRequest(t, wiring.BusRequest{V: wiring.BusRequestVersion, Op: "send", Budget: time.Minute})
	over := fmt.Appendf(nil, `{"v":1,"version":"x","code":0,"doc":"%s","stderr":[]}`, strings.Repeat("a", wiring.MaxBusAnswerBytes))
	for _, tc := range []struct {
		name   string
		answer []byte
		err    error
		fault  string
		want   string
	}{
		{"over the bound", over, nil, BusBroken, "over 1048576"},
		{"no answer", []byte("not json"), nil, BusBroken, "an answer that is none"},
		{"no service", nil, fmt.Errorf("%w: nats: no responders", wiring.ErrBusNoService), BusNoService, "no responders"},
		{"not sent", nil, fmt.Errorf("%w: permissions violation", wiring.ErrBusNotSent), BusNotSent, "permissions violation"},
		{"went out, no answer", nil, errors.New("context deadline exceeded"), BusUnanswered, "deadline"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			link := NewBusLink("alpha", "nats://x:4222")
			link.Set(&fakeCarrier{answer: tc.answer, err: tc.err})
			a := newServer(t.Context(), Options{Bus: link}).Serve(t.Context(), Request{V: Protocol, Op: "bus", Bus: "nats://x:4222", Node: "beta", Carry: req}, nil)
			assert.True(t, a.Done)
			assert.Equal(t, tc.fault, a.BusFault)
			assert.Contains(t, string(a.Error), tc.want)
			assert.Nil(t, a.Bus, "nothing of it is passed on")
		})
	}
}

// A password or token in the servers' URLs is never said: not in the
// service's status (serve status, its --json), not in a refusal of a
// request for another bus.
func TestServeBusNeverSaysItsPassword(t *testing.T) {
	link := NewBusLink("dave", "nats://u:secretpw@x:4222,nats://tok3n@y:4222")
	assert.Equal(t, "nats://u:xxxxx@x:4222,nats://xxxxx@y:4222", link.status().Servers)
	link.Set(&fakeCarrier{answer: []byte(`{}`)})
	good := busRequest(t, wiring.BusRequest{V: wiring.BusRequestVersion, Op: "doctor", Budget: time.Minute})
	a := newServer(t.Context(), Options{Bus: link}).Serve(t.Context(), Request{V: Protocol, Op: "bus", Bus: "nats://v:otherpw@z:4222", Node: "beta", Carry: good}, nil)
	assert.Equal(t, BusNotSent, a.BusFault)
	for _, secret := range []string{"secretpw", "tok3n", "otherpw"} {
		assert.NotContains(t, string(a.Error), secret)
	}
}
