package doctor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/stackward/stackward/pkg/pki"
)

// DefaultServingCAFile is where `stackward pki init` puts the CA on a
// kubeadm control-plane host.
const DefaultServingCAFile = "/etc/kubernetes/pki/" + pki.CertFile

// DefaultCAExpiryWarning leaves time for a rotation (stackward pki rotate)
// across every control-plane host and kubelet before the CA expires.
// `kubeadm certs check-expiration` does not know this CA.
const DefaultCAExpiryWarning = 90 * 24 * time.Hour

// CAStatus is what doctor found of one copy of the kubelet-serving CA.
type CAStatus struct {
	// Source is the file or the Secret (namespace/name) it was read from.
	Source   string    `json:"source"`
	Subject  string    `json:"subject,omitempty"`
	Serial   string    `json:"serial,omitempty"`
	NotAfter time.Time `json:"notAfter,omitempty"`
	// ExpiresIn is the time left, rounded to days.
	ExpiresIn string `json:"expiresIn,omitempty"`
	// Expiring is set when NotAfter is within the warning threshold.
	Expiring bool `json:"expiring"`
	// Error says why the copy could not be read.
	Error string `json:"error,omitempty"`
}

// Problem reports whether the status needs attention.
func (s CAStatus) Problem() bool { return s.Expiring || s.Error != "" }

// servingCAStatus reads the CA from file and from the chart signer's
// Secret. The default file missing (not a control-plane host) and the
// Secret missing or forbidden (KCM signs) are no findings; an explicitly
// named file that cannot be read is.
func servingCAStatus(ctx context.Context, client kubernetes.Interface, file string, explicitFile bool, threshold time.Duration, now time.Time) []CAStatus {
	var out []CAStatus
	if file != "" {
		data, err := os.ReadFile(file)
		switch {
		case err == nil:
			out = append(out, caStatus(file, data, threshold, now))
		case errors.Is(err, fs.ErrNotExist) && !explicitFile:
		default:
			out = append(out, CAStatus{Source: file, Error: err.Error()})
		}
	}
	src := pki.SecretNamespace + "/" + pki.SecretName
	s, err := client.CoreV1().Secrets(pki.SecretNamespace).Get(ctx, pki.SecretName, metav1.GetOptions{})
	switch {
	case err == nil:
		out = append(out, caStatus("Secret "+src, s.Data[pki.CertFile], threshold, now))
	case apierrors.IsNotFound(err) || apierrors.IsForbidden(err):
	default:
		out = append(out, CAStatus{Source: "Secret " + src, Error: err.Error()})
	}
	return out
}

func caStatus(source string, certPEM []byte, threshold time.Duration, now time.Time) CAStatus {
	st := CAStatus{Source: source}
	expiring, notAfter, err := pki.ExpiresWithin(certPEM, now, threshold)
	if err != nil {
		st.Error = fmt.Sprintf("not a certificate: %v", err)
		return st
	}
	st.NotAfter, st.Expiring = notAfter, expiring
	st.ExpiresIn = fmt.Sprintf("%dd", int(notAfter.Sub(now).Hours()/24))
	if c, err := pki.ParseCertificate(certPEM); err == nil {
		st.Subject, st.Serial = c.Subject.CommonName, c.SerialNumber.String()
	}
	return st
}

func caLine(s CAStatus, threshold time.Duration) string {
	switch {
	case s.Error != "":
		return fmt.Sprintf("* kubelet-serving CA in %s cannot be read: %s", s.Source, s.Error)
	case s.NotAfter.IsZero():
		return ""
	case s.Expiring && s.ExpiresIn[0] == '-':
		return fmt.Sprintf("* kubelet-serving CA %q in %s EXPIRED on %s: kubelets' serving certificates no longer verify; do: stackward pki rotate",
			s.Subject, s.Source, s.NotAfter.UTC().Format("2006-01-02"))
	case s.Expiring:
		return fmt.Sprintf("* kubelet-serving CA %q in %s expires on %s, in %s (within %dd): do: stackward pki rotate (bootstrap/README.md)",
			s.Subject, s.Source, s.NotAfter.UTC().Format("2006-01-02"), s.ExpiresIn, int(threshold.Hours()/24))
	}
	return fmt.Sprintf("kubelet-serving CA %q in %s: valid until %s (%s)", s.Subject, s.Source, s.NotAfter.UTC().Format("2006-01-02"), s.ExpiresIn)
}
