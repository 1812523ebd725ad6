package approver

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certlisters "k8s.io/client-go/listers/certificates/v1"
	"k8s.io/client-go/tools/cache"
)

// Tokens the fake apiserver knows.
const (
	scraperToken = "scraper-token" // may get /metrics
	nobodyToken  = "nobody-token"  // authenticated, no rights
)

// fakeAuthAPIServer answers TokenReviews and SubjectAccessReviews as an
// apiserver with one RBAC rule would: the scraper may get /metrics. It
// returns a kubeconfig reaching it.
func fakeAuthAPIServer(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /apis/authentication.k8s.io/v1/tokenreviews", func(w http.ResponseWriter, r *http.Request) {
		var tr authenticationv1.TokenReview
		if err := json.NewDecoder(r.Body).Decode(&tr); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		switch tr.Spec.Token {
		case scraperToken:
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "system:serviceaccount:monitoring:prometheus"}}
		case nobodyToken:
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "nobody"}}
		}
		tr.APIVersion, tr.Kind = "authentication.k8s.io/v1", "TokenReview"
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(tr)
	})
	mux.HandleFunc("POST /apis/authorization.k8s.io/v1/subjectaccessreviews", func(w http.ResponseWriter, r *http.Request) {
		var sar authorizationv1.SubjectAccessReview
		if err := json.NewDecoder(r.Body).Decode(&sar); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		nr := sar.Spec.NonResourceAttributes
		sar.Status.Allowed = sar.Spec.User == "system:serviceaccount:monitoring:prometheus" && nr != nil && nr.Path == "/metrics" && nr.Verb == "get"
		sar.APIVersion, sar.Kind = "authorization.k8s.io/v1", "SubjectAccessReview"
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(sar)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	content := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: approver}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, srv.URL)
	if err := os.WriteFile(kubeconfig, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}

// testServing serves on a free loopback port, authenticating and
// authorizing through the fake apiserver.
func testServing(t *testing.T) *Serving {
	t.Helper()
	kubeconfig := fakeAuthAPIServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewServing()
	s.SecureServing.Listener, s.SecureServing.BindPort = ln, 0
	s.Authentication.RemoteKubeConfigFile = kubeconfig
	// The fake has no extension-apiserver-authentication ConfigMap.
	s.Authentication.SkipInClusterLookup = true
	s.Authorization.RemoteKubeConfigFile = kubeconfig
	return s
}

// getWithToken GETs url over HTTPS without verifying the self-signed
// certificate (as the kubelet's probes do), with a bearer token if given.
func getWithToken(url, token string) (int, string) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, err.Error()
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestMetricsBindAddressReplacesTheServingAddress(t *testing.T) {
	tests := []struct {
		name, addr, wantBind string
		wantPort             int
		wantNothing, wantErr bool
	}{
		{name: "empty keeps the serving flags", addr: "", wantBind: "127.0.0.1", wantPort: DefaultSecurePort},
		{name: "0 serves nothing", addr: "0", wantNothing: true},
		{name: "a host and port replace both", addr: "192.0.2.7:9443", wantBind: "192.0.2.7", wantPort: 9443},
		{name: "an empty host is every address", addr: ":9443", wantBind: "0.0.0.0", wantPort: 9443},
		{name: "a name is not an address", addr: "localhost:9443", wantErr: true},
		{name: "a port is required", addr: "127.0.0.1", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := applyMetricsBindAddress(NewServing(), tt.addr)
			switch {
			case tt.wantErr:
				if err == nil || !strings.Contains(err.Error(), "--metrics-bind-address") {
					t.Errorf("error %v, want one naming --metrics-bind-address", err)
				}
			case err != nil:
				t.Fatal(err)
			case tt.wantNothing:
				if s.enabled() {
					t.Errorf("serving %+v, want nothing", s.SecureServing)
				}
			case s.SecureServing.BindAddress.String() != tt.wantBind || s.SecureServing.BindPort != tt.wantPort:
				t.Errorf("serving on %s:%d, want %s:%d", s.SecureServing.BindAddress, s.SecureServing.BindPort, tt.wantBind, tt.wantPort)
			}
		})
	}
}

// TestPendingGaugeCountsUndecidedServingRequests: the gauge counts the
// kubelet serving requests not yet decided, and the age is the oldest's.
func TestPendingGaugeCountsUndecidedServingRequests(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	csr := func(name, signer string, age time.Duration, cond certificatesv1.RequestConditionType) *certificatesv1.CertificateSigningRequest {
		c := &certificatesv1.CertificateSigningRequest{
			ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now.Add(-age))},
			Spec:       certificatesv1.CertificateSigningRequestSpec{SignerName: signer},
		}
		if cond != "" {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: cond, Status: "True"}}
		}
		return c
	}
	tests := []struct {
		name   string
		csrs   []*certificatesv1.CertificateSigningRequest
		synced bool
		want   string
	}{
		{name: "two pending requests count, the oldest's age is reported", synced: true, csrs: []*certificatesv1.CertificateSigningRequest{
			csr("old", certificatesv1.KubeletServingSignerName, 90*time.Second, ""),
			csr("new", certificatesv1.KubeletServingSignerName, 30*time.Second, ""),
			csr("approved", certificatesv1.KubeletServingSignerName, time.Hour, certificatesv1.CertificateApproved),
			csr("denied", certificatesv1.KubeletServingSignerName, time.Hour, certificatesv1.CertificateDenied),
			csr("client", certificatesv1.KubeAPIServerClientKubeletSignerName, time.Hour, ""),
		}, want: "stackward_csr_oldest_pending_age_seconds 90\nstackward_csr_pending 2\n"},
		{name: "nothing pending is zero and zero", synced: true, csrs: []*certificatesv1.CertificateSigningRequest{
			csr("approved", certificatesv1.KubeletServingSignerName, time.Hour, certificatesv1.CertificateApproved),
		}, want: "stackward_csr_oldest_pending_age_seconds 0\nstackward_csr_pending 0\n"},
		{name: "an unsynced cache (a standby) reports nothing", synced: false, csrs: []*certificatesv1.CertificateSigningRequest{
			csr("old", certificatesv1.KubeletServingSignerName, 90*time.Second, ""),
		}, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			for _, c := range tt.csrs {
				if err := idx.Add(c); err != nil {
					t.Fatal(err)
				}
			}
			p := newPendingCollector(certlisters.NewCertificateSigningRequestLister(idx), func() bool { return tt.synced }, func() time.Time { return now })
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(p)
			want := ""
			if tt.want != "" {
				want = "# HELP stackward_csr_oldest_pending_age_seconds Age of the oldest pending kubelet serving CSR (0: none pending).\n" +
					"# TYPE stackward_csr_oldest_pending_age_seconds gauge\n" +
					"# HELP stackward_csr_pending Kubelet serving CSRs neither approved, denied nor failed, nor issued (signer kubernetes.io/kubelet-serving), as the leader's cache holds them.\n" +
					"# TYPE stackward_csr_pending gauge\n"
				lines := strings.SplitAfter(tt.want, "\n")
				want = strings.Replace(want, "# HELP stackward_csr_pending", lines[0]+"# HELP stackward_csr_pending", 1) + lines[1]
			}
			if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "stackward_csr_pending", "stackward_csr_oldest_pending_age_seconds"); err != nil {
				t.Error(err)
			}
		})
	}
}
