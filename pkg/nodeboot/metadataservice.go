package nodeboot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"k8s.io/klog/v2"
)

// Names of the sources, the same words as the upstream OpenStack CCM's
// [Metadata] search-order.
const (
	SourceMetadataService = "metadataService"
	SourceConfigDrive     = "configDrive"
)

// InstanceIDHeader is understood by stackward-cloudsim's metadata service to
// tell it which server is asking when source addresses cannot (a real Nova
// ignores it).
const InstanceIDHeader = "X-Stackward-Instance-ID"

// maxBody bounds what is read from the metadata service; real documents are a
// few KiB.
const maxBody = 1 << 20

// metadataService reads the Nova metadata service over HTTP with a
// per-request timeout and a bounded number of attempts.
type metadataService struct {
	baseURL    string
	client     *http.Client
	attempts   int
	backoff    time.Duration
	instanceID string
}

// newMetadataService builds the HTTP client once. sourceIP, if set, is the
// local address requests are sent from: the simulator (like Neutron's
// metadata proxy) identifies the instance by its source address, and a
// multi-homed host must pick the instance's own address.
func newMetadataService(cfg Config) (*metadataService, error) {
	dialer := &net.Dialer{Timeout: cfg.RequestTimeout}
	if cfg.MetadataSourceIP != "" {
		ip := net.ParseIP(cfg.MetadataSourceIP)
		if ip == nil {
			return nil, fmt.Errorf("--metadata-source-ip %q is not an IP address", cfg.MetadataSourceIP)
		}
		dialer.LocalAddr = &net.TCPAddr{IP: ip}
	}
	tr := &http.Transport{
		// The link-local metadata address must never go through a proxy.
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		ResponseHeaderTimeout: cfg.RequestTimeout,
		DisableKeepAlives:     true,
	}
	return &metadataService{
		baseURL:    strings.TrimRight(cfg.MetadataURL, "/"),
		client:     &http.Client{Transport: tr, Timeout: cfg.RequestTimeout},
		attempts:   max(cfg.Attempts, 1),
		backoff:    cfg.RetryBackoff,
		instanceID: cfg.MetadataInstanceID,
	}, nil
}

func (m *metadataService) Name() string { return SourceMetadataService }

func (m *metadataService) Fetch(ctx context.Context) (*Instance, error) {
	mdURL := m.baseURL + "/" + latestPath + "/" + metaDataFile
	b, err := m.get(ctx, mdURL)
	if err != nil {
		return nil, err
	}
	md, err := decodeMetaData(b, mdURL)
	if err != nil {
		return nil, err
	}
	ndURL := m.baseURL + "/" + latestPath + "/" + networkDataFile
	b, err = m.get(ctx, ndURL)
	if err != nil {
		return nil, err
	}
	nd, err := decodeNetworkData(b, ndURL)
	if err != nil {
		return nil, err
	}
	return &Instance{Source: SourceMetadataService, Origin: m.baseURL, Meta: md, Network: nd}, nil
}

// get fetches url, retrying connection errors, timeouts, 429 and 5xx up to
// m.attempts times with doubling backoff. A 404 is final: the document does
// not exist (or this is not an OpenStack metadata service).
func (m *metadataService) get(ctx context.Context, url string) ([]byte, error) {
	logger := klog.FromContext(ctx).WithValues("url", url)
	wait := m.backoff
	var (
		lastErr error
		tried   int
	)
	for attempt := 1; attempt <= m.attempts; attempt++ {
		tried = attempt
		b, retry, err := m.getOnce(ctx, url)
		if err == nil {
			return b, nil
		}
		lastErr = err
		if !retry || ctx.Err() != nil {
			break
		}
		if attempt < m.attempts {
			logger.V(2).Info("Metadata request failed, retrying", "attempt", attempt, "err", err.Error(), "wait", wait)
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("GET %s: %w (last error: %w)", url, ctx.Err(), lastErr)
			case <-time.After(wait):
			}
			wait = min(2*wait, 5*time.Second)
		}
	}
	return nil, fmt.Errorf("GET %s (%d of at most %d attempts): %w: %w", url, tried, m.attempts, ErrSourceUnavailable, lastErr)
}

func (m *metadataService) getOnce(ctx context.Context, url string) (body []byte, retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, false, err
	}
	if m.instanceID != "" {
		req.Header.Set(InstanceIDHeader, m.instanceID)
	}
	resp, err := m.client.Do(req)
	if err != nil {
		return nil, true, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, true, fmt.Errorf("read body: %w", err)
	}
	switch {
	case resp.StatusCode == http.StatusOK:
		return b, false, nil
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return nil, true, fmt.Errorf("HTTP %d: %s", resp.StatusCode, snippet(b))
	default:
		return nil, false, fmt.Errorf("HTTP %d: %s", resp.StatusCode, snippet(b))
	}
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// isUnavailable reports whether err means "try the next source".
func isUnavailable(err error) bool { return errors.Is(err, ErrSourceUnavailable) }
