package approver

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stackward/stackward/pkg/nodeaddress"
	"github.com/stackward/stackward/pkg/openstack"
)

// Keys are generated once: RSA generation dominates the test time otherwise.
var testKeys = sync.OnceValue(func() map[string]crypto.Signer {
	must := func(k crypto.Signer, err error) crypto.Signer {
		if err != nil {
			panic(err)
		}
		return k
	}
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	return map[string]crypto.Signer{
		"rsa2048": must(rsa.GenerateKey(rand.Reader, 2048)),
		"rsa1024": must(rsa.GenerateKey(rand.Reader, 1024)),
		"p256":    must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader)),
		"p384":    must(ecdsa.GenerateKey(elliptic.P384(), rand.Reader)),
		"p224":    must(ecdsa.GenerateKey(elliptic.P224(), rand.Reader)),
		"ed25519": edKey,
	}
})

// csrSpec describes a request to build; zero fields take kubelet-like values.
type csrSpec struct {
	name       string
	node       string // the requesting node; username and subject follow it
	key        string // key of testKeys; p256 by default
	cn         *string
	org        []string
	noOrg      bool
	ou         []string
	dns, ips   []string
	emails     []string
	uris       []string
	exts       []pkix.Extension
	username   *string
	groups     []string
	usages     []certificatesv1.KeyUsage
	signer     string
	expiration *int32
	raw        []byte // spec.request as is
	created    time.Time
}

func ptr[T any](v T) *T { return &v }

var (
	usagesECDSA = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
	usagesRSA   = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageServerAuth}
)

func csrPEM(t testing.TB, s csrSpec) []byte {
	t.Helper()
	key := testKeys()[orDefault(s.key, "p256")]
	tmpl := &x509.CertificateRequest{
		Subject:         pkix.Name{CommonName: nodeUserPrefix + s.node, Organization: []string{nodesGroup}},
		DNSNames:        s.dns,
		EmailAddresses:  s.emails,
		ExtraExtensions: s.exts,
	}
	if s.cn != nil {
		tmpl.Subject.CommonName = *s.cn
	}
	if s.org != nil {
		tmpl.Subject.Organization = s.org
	}
	if s.noOrg {
		tmpl.Subject.Organization = nil
	}
	tmpl.Subject.OrganizationalUnit = s.ou
	for _, ip := range s.ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	for _, u := range s.uris {
		parsed, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		tmpl.URIs = append(tmpl.URIs, parsed)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatalf("create CSR: %v", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func makeCSR(t testing.TB, s csrSpec) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	req := s.raw
	if req == nil {
		req = csrPEM(t, s)
	}
	user := nodeUserPrefix + s.node
	if s.username != nil {
		user = *s.username
	}
	groups := s.groups
	if groups == nil {
		groups = []string{nodesGroup, "system:authenticated"}
	}
	usages := s.usages
	if usages == nil {
		usages = usagesECDSA
		if k := orDefault(s.key, "p256"); k == "rsa2048" || k == "rsa1024" {
			usages = usagesRSA
		}
	}
	name := orDefault(s.name, "csr-"+s.node)
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(s.created)},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:           req,
			SignerName:        orDefault(s.signer, certificatesv1.KubeletServingSignerName),
			Username:          user,
			Groups:            groups,
			Usages:            usages,
			ExpirationSeconds: s.expiration,
		},
	}
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// fakeCloud is a cloud of fixed servers. Lookups by providerID use
// "openstack:///<id>"; by name, exact names (two servers may share one).
type fakeCloud struct {
	mu      sync.Mutex
	servers []openstack.Server
	err     error // returned by every call when set
	calls   []string
	// views override what Neutron says a server (by ID) owns; without one
	// it owns exactly its Nova addresses (see derivedView).
	views  map[string]nodeaddress.CloudView
	ownErr error // the OwnershipErr of every instance when set
}

func (c *fakeCloud) InstanceForNode(ctx context.Context, providerID, nodeName string, _ []netip.Addr) (*Instance, error) {
	srv, err := c.serverForNode(ctx, providerID, nodeName)
	if err != nil {
		return nil, err
	}
	inst := &Instance{Server: srv}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch v, ok := c.views[srv.ID]; {
	case c.ownErr != nil:
		inst.OwnershipErr = c.ownErr
	case ok:
		inst.Ownership = &v
	default:
		d := derivedView(srv)
		inst.Ownership = &d
	}
	return inst, nil
}

// derivedView is what Neutron says of a well-behaved server of project
// "proj": one port per Nova network (network "net-<name>" of "proj"), with
// the fixed addresses, and the floating ones on that port.
func derivedView(srv *openstack.Server) nodeaddress.CloudView {
	v := nodeaddress.CloudView{Server: srv}
	for _, name := range slices.Sorted(maps.Keys(srv.Addresses)) {
		p := openstack.Port{ID: "port-" + srv.ID + "-" + name, DeviceID: srv.ID, ProjectID: testProject, NetworkID: "net-" + name,
			Status: openstack.PortStatusActive, BindingHostID: "compute-1", BindingHostKnown: true}
		for _, a := range srv.Addresses[name] {
			if a.Type != openstack.AddressFloating {
				p.FixedIPs = append(p.FixedIPs, openstack.FixedIP{IPAddress: a.Addr})
			}
		}
		for _, a := range srv.Addresses[name] {
			if a.Type == openstack.AddressFloating {
				v.FloatingIPs = append(v.FloatingIPs, openstack.FloatingIP{ID: "fip-" + a.Addr, Address: a.Addr, PortID: p.ID, ProjectID: testProject})
			}
		}
		v.Ports = append(v.Ports, p)
		v.Networks = append(v.Networks, openstack.NetworkInfo{ID: p.NetworkID, Name: name, ProjectID: testProject})
	}
	return v
}

const testProject = "proj"

func (c *fakeCloud) serverForNode(_ context.Context, providerID, nodeName string) (*openstack.Server, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, fmt.Sprintf("%s|%s", providerID, nodeName))
	if c.err != nil {
		return nil, c.err
	}
	var found []openstack.Server
	for _, s := range c.servers {
		if (providerID != "" && providerID == "openstack:///"+s.ID) || (providerID == "" && s.Name == nodeName) {
			found = append(found, s)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("server for node %q: %w", nodeName, openstack.ErrNotFound)
	case 1:
		return &found[0], nil
	}
	return nil, fmt.Errorf("server named %q: %w", nodeName, openstack.ErrAmbiguous)
}

func (c *fakeCloud) setErr(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.err = err
}

func server(id, name, status, fixed, floating string) openstack.Server {
	addrs := []openstack.ServerAddress{{Addr: fixed, Version: 4, Type: openstack.AddressFixed}}
	if floating != "" {
		addrs = append(addrs, openstack.ServerAddress{Addr: floating, Version: 4, Type: openstack.AddressFloating})
	}
	return openstack.Server{ID: id, Name: name, Status: status, TenantID: testProject, Addresses: map[string][]openstack.ServerAddress{"private": addrs}}
}

// testCloud: node-a and node-b are running, node-off is shut off, node-dead
// is deleted, two servers are named twin, node-bad has an address that is
// not an IP. The attackers: node-acc set its accessIPv4; node-svc has a
// port in the Service CIDR; node-other is another project's; node-xport's
// port and node-xnet's network belong to another project; node-noport has
// an address Nova lists but no port of the project carries; the server of
// Node node-k is named with a KELVIN SIGN.
func testCloud() *fakeCloud {
	bad := server("id-bad", "node-bad", openstack.StatusActive, "10.0.0.66", "")
	bad.Addresses["private"] = append(bad.Addresses["private"], openstack.ServerAddress{Addr: "not-an-ip", Type: openstack.AddressFixed})
	acc := server("id-acc", "node-acc", openstack.StatusActive, "10.0.0.20", "")
	acc.AccessIPv4 = "203.0.113.20"
	svc := server("id-svc", "node-svc", openstack.StatusActive, "10.0.0.21", "")
	svc.Addresses["private"] = append(svc.Addresses["private"], openstack.ServerAddress{Addr: "10.96.0.1", Version: 4, Type: openstack.AddressFixed})
	other := server("id-other", "node-other", openstack.StatusActive, "10.0.0.22", "")
	other.TenantID = "other"
	xport := server("id-xport", "node-xport", openstack.StatusActive, "10.0.0.23", "")
	xportView := derivedView(&xport)
	xportView.Ports[0].ProjectID = "other"
	xnet := server("id-xnet", "node-xnet", openstack.StatusActive, "10.0.0.24", "")
	xnetView := derivedView(&xnet)
	// Another project's network of the same name (Neutron allows it).
	xnetView.Ports[0].NetworkID, xnetView.Networks[0].ID, xnetView.Networks[0].ProjectID = "net-theirs", "net-theirs", "other"
	noport := server("id-noport", "node-noport", openstack.StatusActive, "10.0.0.25", "")
	going := server("id-going", "node-going", openstack.StatusActive, "10.0.0.27", "")
	going.TaskState = "deleting"
	// A member created a port with node-forged's device_id (Neutron allows
	// it): never bound, DOWN; Nova lists its address after a cache refresh.
	forged := server("id-forged", "node-forged", openstack.StatusActive, "10.0.0.28", "")
	forged.Addresses["private"] = append(forged.Addresses["private"], openstack.ServerAddress{Addr: "10.0.0.29", Version: 4, Type: openstack.AddressFixed})
	forgedView := derivedView(&forged)
	forgedView.Ports[0].FixedIPs = forgedView.Ports[0].FixedIPs[:1]
	forgedView.Ports = append(forgedView.Ports, openstack.Port{ID: "port-forged", DeviceID: "id-forged", ProjectID: testProject, NetworkID: "net-private",
		Status: "DOWN", FixedIPs: []openstack.FixedIP{{IPAddress: "10.0.0.29"}}})
	// The same, seen with an administrator's credentials: the port is
	// visibly bound to no host, which a running server's NIC never is.
	forgedAdmin := server("id-forged-admin", "node-forged-admin", openstack.StatusActive, "10.0.0.30", "")
	forgedAdmin.Addresses["private"] = append(forgedAdmin.Addresses["private"], openstack.ServerAddress{Addr: "10.0.0.31", Version: 4, Type: openstack.AddressFixed})
	forgedAdminView := derivedView(&forgedAdmin)
	forgedAdminView.Ports[0].FixedIPs = forgedAdminView.Ports[0].FixedIPs[:1]
	forgedAdminView.Ports = append(forgedAdminView.Ports, openstack.Port{ID: "port-forged-admin", DeviceID: "id-forged-admin", ProjectID: testProject, NetworkID: "net-private",
		Status: "DOWN", BindingHostKnown: true, FixedIPs: []openstack.FixedIP{{IPAddress: "10.0.0.31"}}})
	return &fakeCloud{views: map[string]nodeaddress.CloudView{
		"id-xport": xportView, "id-xnet": xnetView, "id-noport": {Server: &noport}, "id-forged": forgedView, "id-forged-admin": forgedAdminView,
	}, servers: []openstack.Server{
		acc, svc, other, xport, xnet, noport, going, forged, forgedAdmin,
		// A kubeadm control-plane host: its node IP is the endpoint that
		// testPolicy (as an operator misreading the flag would) lists.
		server("id-cp", "cp-1", openstack.StatusActive, "10.0.0.2", ""),
		server("id-kelvin", "node-\u212a", openstack.StatusActive, "10.0.0.26", ""),
		server("id-a", "node-a", openstack.StatusActive, "10.0.0.10", "198.18.0.10"),
		server("id-b", "node-b", openstack.StatusActive, "10.0.0.11", "198.18.0.11"),
		server("id-off", "node-off", openstack.StatusShutoff, "10.0.0.12", ""),
		server("id-dead", "node-dead", openstack.StatusDeleted, "10.0.0.13", ""),
		server("id-twin1", "twin", openstack.StatusActive, "10.0.0.14", ""),
		server("id-twin2", "twin", openstack.StatusActive, "10.0.0.15", ""),
		server("id-Caps", "Node-Caps", openstack.StatusActive, "10.0.0.16", ""),
		server("id-k8s", "kubernetes", openstack.StatusActive, "10.0.0.17", ""),
		server("id-kw1", "kubernetes-worker-1", openstack.StatusActive, "10.0.0.18", ""),
		bad,
	}}
}

func node(name, providerID string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: providerID}}
}

// registered finds a Node, with no provider ID yet, for every name: each
// requestor has registered and the CCM has initialized none.
func registered(_ context.Context, name string) (*corev1.Node, error) { return node(name, ""), nil }

// withRegistered is nodeGetter over nodes, plus a Node with no provider ID
// for each of names that nodes do not hold.
func withRegistered(nodes []*corev1.Node, names ...string) NodeGetter {
	all := slices.Clone(nodes)
	for _, n := range names {
		all = append(all, node(n, ""))
	}
	return nodeGetter(all...)
}

func nodeGetter(nodes ...*corev1.Node) NodeGetter {
	return func(_ context.Context, name string) (*corev1.Node, error) {
		for _, n := range nodes {
			if n.Name == name {
				return n, nil
			}
		}
		return nil, nil
	}
}

var testPolicy = Policy{DNSSuffixes: []string{".cluster.example."}, MaxExpiration: 48 * time.Hour, ProjectID: testProject,
	ServiceCIDRs: []netip.Prefix{netip.MustParsePrefix("10.96.0.0/12")}, ControlPlaneEndpoints: []netip.Addr{netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.3")}}
