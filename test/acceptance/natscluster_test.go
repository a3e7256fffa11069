//go:build unix

package acceptance

// A real three-server NATS JetStream cluster on loopback, for the live
// fleet tests: nats-server processes built from the module this one pins
// (github.com/nats-io/nats-server/v2, go.mod) with `go build`, not Debian's
// package, which is 2.9.10: its KV buckets have no limit markers
// (LimitMarkerTTL, server 2.11), which the presence bucket uses. Started
// once per test process, on first use, and shared; TestMain stops it.
//
// Its users are `peerctl policy nats-config`'s for the nodes fleetNodes (their
// seeds in natsKeys), so a test can prove what a node's credentials may
// not do; a client with no credentials is the user "anon", allowed
// everything (no_auth_user), as the tests that use no credentials need.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/natsbus"
	"github.com/peerctl/peerctl/ports/wire"
	"github.com/peerctl/peerctl/test/testbin"
	"github.com/peerctl/peerctl/test/testproc"
)

// fleetNodes have credentials of their own on the shared cluster.
var fleetNodes = []string{"lima", "mike"}

// natsKeys is the folder of fleetNodes' seeds (NODE.nk) on the shared
// cluster (start it first: sharedNATSCluster).
func natsKeys() string { return filepath.Join(cluster.dir, "keys") }

// fleetAuth is the servers' authorization: policy nats-config's block for
// fleetNodes and the operator (whose key makes the fleet's streams once
// the servers are up: setUpFleet), with the user "anon" everyone without credentials is.
func fleetAuth() (string, error) {
	var users []natsbus.NodeUser
	for _, n := range fleetNodes {
		pub, _, err := natsbus.NodeKey(natsKeys(), n)
		if err != nil {
			return "", err
		}
		users = append(users, natsbus.NodeUser{Node: n, PublicKey: pub})
	}
	admin, _, err := natsbus.AdminKey(natsKeys())
	if err != nil {
		return "", err
	}
	conf, err := natsbus.ServerConfig(admin, users)
	if err != nil {
		return "", err
	}
	anon := "  users = [\n    { user: anon, password: \"not-used-no_auth_user\", permissions: { publish: \">\", subscribe: \">\" } }\n"
	return "no_auth_user: anon\n" + strings.Replace(conf, "  users = [\n", anon, 1), nil
}

// natsServerPkg is the server's main package, at go.mod's version.
const natsServerPkg = "github.com/nats-io/nats-server/v2"

// natsCluster is the shared cluster: its client URLs (comma-separated),
// its servers' processes and their logs.
type natsCluster struct {
	urls  string
	procs []*exec.Cmd
	logs  []*testproc.Buffer
	mons  []string // each server's monitoring address (host:port)
	dir   string
	err   error
}

var (
	clusterOnce sync.Once
	cluster     natsCluster
)

func init() { stopShared = append(stopShared, cluster.stop) }

// sharedNATSCluster starts the cluster once (a failure fails every test
// that asks for it) and returns its client URLs.
func sharedNATSCluster(t testing.TB) string {
	t.Helper()
	clusterOnce.Do(func() { cluster.err = cluster.start(t) })
	if cluster.err != nil {
		t.Fatalf("the NATS cluster: %v", cluster.err)
	}
	return cluster.urls
}

// freePorts are n loopback ports free a moment ago.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func (c *natsCluster) start(t testing.TB) error {
	bin := testbin.Build(t, natsServerPkg)
	dir, err := os.MkdirTemp("", "peerctl-nats-")
	if err != nil {
		return err
	}
	c.dir = dir
	ports, err := freePorts(9) // client, monitor, route for each of 3
	if err != nil {
		return err
	}
	var routes, urls []string
	for i := range 3 {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", ports[3*i+2]))
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", ports[3*i]))
		c.mons = append(c.mons, fmt.Sprintf("127.0.0.1:%d", ports[3*i+1]))
	}
	c.urls = strings.Join(urls, ",")
	auth, err := fleetAuth()
	if err != nil {
		return err
	}
	for i := range 3 {
		conf := fmt.Sprintf(`server_name: n%d
listen: 127.0.0.1:%d
http: 127.0.0.1:%d
jetstream { store_dir: %q }
cluster { name: pc, listen: 127.0.0.1:%d, routes: [%s] }
`, i+1, ports[3*i], ports[3*i+1], filepath.Join(dir, fmt.Sprintf("js%d", i+1)), ports[3*i+2], strings.Join(routes, ", ")) + auth
		path := filepath.Join(dir, fmt.Sprintf("n%d.conf", i+1))
		if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
			return err
		}
		cmd := exec.Command(bin, "-c", path)
		log := &testproc.Buffer{}
		cmd.Stdout, cmd.Stderr = log, log
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			c.stop()
			return err
		}
		c.procs, c.logs = append(c.procs, cmd), append(c.logs, log)
	}
	// Ready when every server's /healthz says ok (JetStream's meta leader
	// elected); each request has its own bound, the whole a generous one.
	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(2 * time.Minute)
	for i := range 3 {
		for {
			res, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", ports[3*i+1]))
			if err == nil {
				_ = res.Body.Close()
				if res.StatusCode == http.StatusOK {
					break
				}
			}
			if time.Now().After(deadline) {
				defer c.stop()
				return fmt.Errorf("server n%d not healthy within 2 min (%v); its log:\n%s", i+1, err, c.logs[i].String())
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return setUpFleet(c.urls)
}

// setUpFleet is the operator's step (policy nats-setup) on the cluster:
// the mail stream and presence bucket made with the operator's key, which
// per-node credentials may not make. Tried until the cluster takes it
// (its stream placement may wait on the meta leader), for a generous while.
func setUpFleet(urls string) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		b, err := natsbus.Connect(natsbus.Settings{URLs: urls, Creds: filepath.Join(natsKeys(), wire.AdminKeyFile), Operator: true, Name: "operator", Timeout: 10 * time.Second}, false)
		if err == nil {
			_, _, err = b.Setup(context.Background())
			b.Close()
		}
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(time.Second)
	}
}

// stop kills every server's process group and removes their stores.
func (c *natsCluster) stop() {
	for _, p := range c.procs {
		_ = syscall.Kill(-p.Process.Pid, syscall.SIGKILL)
		_ = p.Wait()
	}
	c.procs = nil
	if c.dir != "" {
		_ = os.RemoveAll(c.dir)
	}
}

// healthy says whether every server's /healthz is ok (its JetStream meta
// leader known, every stream and consumer it holds current) and every one
// of streams that exists has a leader and all its replicas current and
// online; why not when not.
func (c *natsCluster) healthy(js jetstream.JetStream, streams ...string) (bool, string) {
	client := &http.Client{Timeout: 5 * time.Second}
	for i, mon := range c.mons {
		res, err := client.Get("http://" + mon + "/healthz")
		if err != nil {
			return false, fmt.Sprintf("server n%d: %v", i+1, err)
		}
		_ = res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return false, fmt.Sprintf("server n%d: /healthz %s", i+1, res.Status)
		}
	}
	for _, name := range streams {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		s, err := js.Stream(ctx, name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			cancel()
			continue
		}
		var info *jetstream.StreamInfo
		if err == nil {
			info, err = s.Info(ctx)
		}
		cancel()
		if err != nil {
			return false, fmt.Sprintf("stream %s: %v", name, err)
		}
		if info.Cluster == nil || info.Cluster.Leader == "" {
			return false, fmt.Sprintf("stream %s: no leader", name)
		}
		if len(info.Cluster.Replicas)+1 != info.Config.Replicas {
			return false, fmt.Sprintf("stream %s: %d of its %d replicas", name, len(info.Cluster.Replicas)+1, info.Config.Replicas)
		}
		for _, r := range info.Cluster.Replicas {
			if !r.Current || r.Offline {
				return false, fmt.Sprintf("stream %s: replica %s not current", name, r.Name)
			}
		}
	}
	return true, ""
}

// waitHealthy waits, within a generous bound, for the shared cluster to
// be healthy (natsCluster.healthy) with streams; a test that kills a
// server asks it before (so what the server held has its other replicas)
// and after starting it again (so the next test finds the cluster whole).
// On failure it logs the servers' logs.
func waitHealthy(t testing.TB, streams ...string) {
	t.Helper()
	nc, err := nats.Connect(cluster.urls, nats.MaxReconnects(-1))
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	var why string
	deadline := time.Now().Add(3 * time.Minute)
	for {
		var ok bool
		if ok, why = cluster.healthy(js, streams...); ok {
			return
		}
		if time.Now().After(deadline) {
			for i, l := range cluster.logs {
				t.Logf("NATS server n%d's log:\n%s", i+1, l.String())
			}
			require.FailNow(t, "the NATS cluster not healthy within 3 min: "+why)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
