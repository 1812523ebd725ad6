//go:build e2e && bench

package bench

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// floodNode is a lightweight node of the fairness benchmarks: a client
// certificate for system:node:<name>, its registered Node and the serving
// request its kubelet would send (or a padded one).
type floodNode struct {
	name      string
	clientset kubernetes.Interface
	key       *ecdsa.PrivateKey
	request   []byte
}

// newFloodNode builds node name at ip; pad > 0 pads its request to about
// pad bytes with DNS names (valid and signed, as a compromised node could
// send; the PEM is 4/3 of the DER).
func newFloodNode(ids *nodeIdentity, name, ip string, pad int) (*floodNode, error) {
	rc, err := ids.config(name)
	if err != nil {
		return nil, err
	}
	rc.QPS, rc.Burst = 1000, 1000 // a flood goes as fast as the apiserver takes it
	n := &floodNode{name: name}
	if n.clientset, err = kubernetes.NewForConfig(rc); err != nil {
		return nil, err
	}
	if n.key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		return nil, err
	}
	tmpl := &x509.CertificateRequest{
		Subject:     pkix.Name{CommonName: "system:node:" + name, Organization: []string{"system:nodes"}},
		DNSNames:    []string{name},
		IPAddresses: []net.IP{net.ParseIP(ip)},
	}
	for size := 0; size < pad*3/4; size += 60 {
		tmpl.DNSNames = append(tmpl.DNSNames, fmt.Sprintf("p-%056d", size))
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, n.key)
	if err != nil {
		return nil, err
	}
	n.request = pemCSR(der)
	// A kubelet asks over the connection it registered on: open it now,
	// not in the clock.
	_, err = n.clientset.Discovery().ServerVersion()
	return n, err
}

// register creates the node's Node as its kubelet would (the approver
// decides only for a registered Node).
func (n *floodNode) register(ctx context.Context, ip string) error {
	_, err := n.clientset.CoreV1().Nodes().Create(ctx, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.name, Annotations: map[string]string{"alpha.kubernetes.io/provided-node-ip": ip}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{
			Key: "node.cloudprovider.kubernetes.io/uninitialized", Value: "true", Effect: corev1.TaintEffectNoSchedule,
		}}},
	}, metav1.CreateOptions{})
	return err
}

// create sends the node's request under name (one of a flood).
func (n *floodNode) create(ctx context.Context, name string) (string, error) {
	_, err := n.clientset.CertificatesV1().CertificateSigningRequests().Create(ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request: n.request, SignerName: certificatesv1.KubeletServingSignerName,
			Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth},
		},
	}, metav1.CreateOptions{})
	return name, err
}
