package doctor

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/stackward/stackward/pkg/pki"
)

func TestServingCAExpiryIsAFindingWithinTheThreshold(t *testing.T) {
	longDir, shortDir := t.TempDir(), t.TempDir()
	if _, err := pki.Init(pki.InitOptions{Dir: longDir}); err != nil {
		t.Fatal(err)
	}
	if _, err := pki.Init(pki.InitOptions{Dir: shortDir, Lifetime: 30 * 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	longFile, shortFile := filepath.Join(longDir, pki.CertFile), filepath.Join(shortDir, pki.CertFile)
	shortPEM, err := os.ReadFile(shortFile)
	if err != nil {
		t.Fatal(err)
	}
	signerSecret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: pki.SecretName, Namespace: pki.SecretNamespace},
		Data:       map[string][]byte{pki.CertFile: shortPEM},
	}
	missing := filepath.Join(t.TempDir(), pki.CertFile)
	now := time.Now()
	for _, tc := range []struct {
		name         string
		file         string
		explicit     bool
		secret       *corev1.Secret
		threshold    time.Duration
		wantFindings int
		wantText     []string
	}{
		{name: "a ten-year CA on this host is reported, not a finding", file: longFile, threshold: DefaultCAExpiryWarning,
			wantText: []string{"kubelet-serving CA \"kubelet-serving-ca\" in " + longFile + ": valid until", "No findings"}},
		{name: "a CA expiring in 30 days is a finding within 90", file: shortFile, threshold: DefaultCAExpiryWarning, wantFindings: 1,
			wantText: []string{"* kubelet-serving CA", "in 29d (within 90d)", "stackward pki rotate"}},
		{name: "the same CA is no finding within 7 days", file: shortFile, threshold: 7 * 24 * time.Hour},
		{name: "the signer's Secret is checked too", file: longFile, secret: signerSecret, threshold: DefaultCAExpiryWarning, wantFindings: 1,
			wantText: []string{"in Secret kube-system/stackward-kubelet-serving-ca expires"}},
		{name: "a host without the default file has nothing to report", file: missing, threshold: DefaultCAExpiryWarning, wantText: []string{"No findings"}},
		{name: "a named file that is missing is a finding", file: missing, explicit: true, threshold: DefaultCAExpiryWarning, wantFindings: 1,
			wantText: []string{"cannot be read", missing}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset()
			if tc.secret != nil {
				client = fake.NewClientset(tc.secret)
			}
			r := &Report{CAExpiryWarning: tc.threshold.String()}
			r.ServingCA = servingCAStatus(context.Background(), client, tc.file, tc.explicit, tc.threshold, now)
			if got := r.Findings(); got != tc.wantFindings {
				t.Errorf("%d findings, want %d: %+v", got, tc.wantFindings, r.ServingCA)
			}
			var out bytes.Buffer
			if err := WriteText(&out, r); err != nil {
				t.Fatal(err)
			}
			for _, want := range tc.wantText {
				if !strings.Contains(out.String(), want) {
					t.Errorf("report lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
}
