package framework

import (
	"bytes"
	"io"
	"net/http"
	"sync"

	"github.com/gophercloud/gophercloud/v2"
)

// Exchange is one HTTP request a client made and the cloud's answer, as
// the differential fidelity test compares them.
type Exchange struct {
	Method string
	// URL is the request's full URL, query included.
	URL    string
	Status int
	Header http.Header
	Body   []byte
}

// Recorder keeps every exchange of the gophercloud clients it is installed
// on, so a test can read what the cloud really answered (status codes,
// headers, error bodies, pages) behind pkg/openstack's adapters.
type Recorder struct {
	next http.RoundTripper

	mu        sync.Mutex
	exchanges []Exchange
}

// Record installs a Recorder on provider: every service client made from
// it (they share its HTTPClient) is recorded from now on.
func Record(provider *gophercloud.ProviderClient) *Recorder {
	next := provider.HTTPClient.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	r := &Recorder{next: next}
	provider.HTTPClient.Transport = r
	return r
}

// RoundTrip implements http.RoundTripper.
func (r *Recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	r.mu.Lock()
	r.exchanges = append(r.exchanges, Exchange{Method: req.Method, URL: req.URL.String(), Status: resp.StatusCode, Header: resp.Header.Clone(), Body: body})
	r.mu.Unlock()
	return resp, nil
}

// Mark is the position of the next exchange, for Since.
func (r *Recorder) Mark() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.exchanges)
}

// Since returns the exchanges recorded from mark on.
func (r *Recorder) Since(mark int) []Exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Exchange(nil), r.exchanges[mark:]...)
}
