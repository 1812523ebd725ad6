package framework

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"k8s.io/client-go/rest"
)

// ExecResult is what `kubectl exec` gets back from the apiserver's first
// answer: the upgrade to a stream, or an error response and its body.
type ExecResult struct {
	Status int
	Body   string
}

// Exec asks the apiserver to exec in a pod's container as kubectl does
// (an HTTP/1.1 upgrade of POST .../exec), and returns the first answer.
// The apiserver dials the kubelet for it over TLS verified with
// --kubelet-certificate-authority, exactly as for logs; a stream granted
// (101) is closed at once.
func (cp *ControlPlane) Exec(ctx context.Context, ns, pod, container string, command ...string) (ExecResult, error) {
	tlsCfg, err := rest.TLSConfigFor(cp.AdminConfig)
	if err != nil {
		return ExecResult{}, err
	}
	tlsCfg = tlsCfg.Clone()
	tlsCfg.NextProtos = []string{"http/1.1"} // an upgrade needs HTTP/1.1
	client := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	q := url.Values{"container": {container}, "stdout": {"true"}}
	for _, c := range command {
		q.Add("command", c)
	}
	u := strings.TrimSuffix(cp.AdminConfig.Host, "/") + "/api/v1/namespaces/" + ns + "/pods/" + pod + "/exec?" + q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if err != nil {
		return ExecResult{}, err
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "SPDY/3.1")
	req.Header.Set("X-Stream-Protocol-Version", "v4.channel.k8s.io")
	resp, err := client.Do(req)
	if err != nil {
		return ExecResult{}, fmt.Errorf("exec in %s/%s: %w", ns, pod, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return ExecResult{Status: resp.StatusCode}, nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return ExecResult{Status: resp.StatusCode, Body: string(body)}, nil
}
