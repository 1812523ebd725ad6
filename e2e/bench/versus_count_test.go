//go:build e2e && bench

package bench

import (
	"context"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stackward/stackward/e2e/framework"
	"github.com/stackward/stackward/internal/cloudsim"
)

// octaviaCounter counts the requests Octavia's API has served so far, from
// every client: a batch's count is the difference, less the bench's own.
type octaviaCounter interface {
	count(t *testing.T) int
}

// simOctavia counts the simulator's Octavia operations.
type simOctavia struct{ cloud *framework.SimCloud }

func (s simOctavia) count(*testing.T) int {
	return SumCalls(s.cloud.Sim.Calls(), cloudsim.ServiceLoadBalancer+".")
}

// octaviaAPILog counts the request lines octavia-api's WSGI server writes
// to its log (hack/realcloud starts it with its output in
// log/octavia-api.log), one per request whoever made it:
//
//	198.18.254.2 - - [27/Nov/2026 13:40:00] "GET /v2/lbaas/loadbalancers HTTP/1.1" 200 1234
type octaviaAPILog struct{ path string }

var octaviaRequestLine = regexp.MustCompile(`(?m)\] "(GET|HEAD|POST|PUT|PATCH|DELETE) /[^ ]* HTTP/1\.[01]" \d{3} `)

func (l octaviaAPILog) count(t *testing.T) int {
	t.Helper()
	data, err := os.ReadFile(l.path)
	if err != nil {
		t.Fatalf("count Octavia requests: %v", err)
	}
	return len(octaviaRequestLine.FindAllIndex(data, -1))
}

// lbWatcher lists the project's load balancers as the CCMs' user and
// counts its own Octavia requests, which the batch subtracts.
type lbWatcher struct {
	api      *framework.CloudAPI
	requests atomic.Int64
}

func newLBWatcher(ctx context.Context, t *testing.T, conf string) *lbWatcher {
	t.Helper()
	w := &lbWatcher{api: framework.NewCloudAPI(ctx, t, conf)}
	pc := w.api.Octavia.ProviderClient
	base := pc.HTTPClient.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	pc.HTTPClient.Transport = countingTransport{base: base, prefix: w.api.Octavia.Endpoint, n: &w.requests}
	return w
}

// countingTransport counts the requests whose URL starts with prefix.
type countingTransport struct {
	base   http.RoundTripper
	prefix string
	n      *atomic.Int64
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasPrefix(r.URL.String(), c.prefix) {
		c.n.Add(1)
	}
	return c.base.RoundTrip(r)
}
