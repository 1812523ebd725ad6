package provider

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stackward/stackward/internal/cloudsim"
	"github.com/stackward/stackward/pkg/config"
	"github.com/stackward/stackward/pkg/openstack"
)

// trunkSim is a simulator whose project has three servers on "private";
// node-1's second network, "storage", arrives on a VLAN subport.
func trunkSim(t *testing.T, networking string) (*cloudsim.Sim, *Cloud, string) {
	t.Helper()
	seed := cloudsim.DefaultSeed()
	seed.Networks = append(seed.Networks, cloudsim.SeedNetwork{Name: "storage", Subnets: []cloudsim.SeedSubnet{{CIDR: "192.168.50.0/24"}}})
	for i := range 3 {
		seed.Servers = append(seed.Servers, cloudsim.ServerSpec{Name: "node-" + string(rune('1'+i)), Flavor: "m1.small",
			NICs: []cloudsim.NICSpec{{Network: "private", FixedIP: "10.0.0.1" + string(rune('1'+i))}}})
	}
	sim, err := cloudsim.New(cloudsim.Options{Seed: seed, RandSeed: 1})
	if err != nil {
		t.Fatal(err)
	}
	authURL, stop, err := sim.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	srv, _ := sim.ServerByName("node-1")
	_, subportIP, err := sim.AddSubport(srv.ID, "storage", "192.168.50.21", 100)
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(t.TempDir(), "cloud.conf")
	if err := os.WriteFile(conf, []byte("[Global]\nauth-url="+authURL+"\nusername=demo\npassword=secret\ndomain-name=Default\ntenant-name=demo\n"+networking), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := config.Load(conf)
	if err != nil {
		t.Fatal(err)
	}
	clients, err := openstack.NewClients(context.Background(), cfg, openstack.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cloud, err := New(cfg, clients, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return sim, cloud, subportIP
}

func simNode(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func TestANodesSubportAddressIsPublished(t *testing.T) {
	tests := []struct {
		name, networking string
		want             corev1.NodeAddress
	}{
		{"a subport's fixed IP is an InternalIP", "", corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "192.168.50.21"}},
		{"a subport on a public network is an ExternalIP", "[Networking]\npublic-network-name=storage\n", corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "192.168.50.21"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, cloud, _ := trunkSim(t, tt.networking)
			md, err := cloud.instances.InstanceMetadata(context.Background(), simNode("node-1"))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(md.NodeAddresses, tt.want) || !slices.Contains(md.NodeAddresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.11"}) {
				t.Fatalf("node-1's addresses %v; want the port's 10.0.0.11 and %v", md.NodeAddresses, tt.want)
			}
		})
	}
	t.Run("an internal-network-name that leaves the subport's network out drops its address", func(t *testing.T) {
		_, cloud, _ := trunkSim(t, "[Networking]\ninternal-network-name=private\n")
		md, err := cloud.instances.InstanceMetadata(context.Background(), simNode("node-1"))
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range md.NodeAddresses {
			if a.Address == "192.168.50.21" {
				t.Fatalf("node-1's addresses %v include the subport on storage", md.NodeAddresses)
			}
		}
	})
}

// TestSubportAddressesCostOneTrunkListingForAllNodes counts the cloud calls
// of initializing every node: the servers listing and one reading of the
// project's trunks (trunks, their ports by ID, the subports' networks) are
// shared by all nodes. Before subports were read, the same nodes cost the
// servers listing alone.
func TestSubportAddressesCostOneTrunkListingForAllNodes(t *testing.T) {
	sim, cloud, _ := trunkSim(t, "")
	sim.ResetCalls()
	for _, n := range []string{"node-1", "node-2", "node-3"} {
		if _, err := cloud.instances.InstanceMetadata(context.Background(), simNode(n)); err != nil {
			t.Fatal(err)
		}
	}
	got := sim.Calls()
	t.Logf("3 nodes cost %v", got)
	want := map[string]int{"compute.servers.detail": 1, "network.trunks.list": 1, "network.ports.list": 1, "network.networks.list": 1}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s: %d calls for 3 nodes, want %d (calls %v)", k, got[k], n, got)
		}
	}
	total := 0
	for k, n := range got {
		if !strings.HasPrefix(k, "identity.") {
			total += n
		}
	}
	if total != 4 {
		t.Errorf("3 nodes cost %d compute and network calls, want 4 (%v)", total, got)
	}
}

// TestATrunkListingFailureIsAnErrorNotNoSubports: a Node never loses its
// subport addresses because Neutron failed; only Neutron without the trunk
// extension (404 on /v2.0/trunks) reads as no subports.
func TestATrunkListingFailureIsAnErrorNotNoSubports(t *testing.T) {
	t.Run("a 500 on the trunk listing fails the node's metadata", func(t *testing.T) {
		sim, cloud, _ := trunkSim(t, "")
		if err := sim.SetFault(cloudsim.FaultRule{Service: "network", Operation: "trunks.list", Status: 500}); err != nil {
			t.Fatal(err)
		}
		md, err := cloud.instances.InstanceMetadata(context.Background(), simNode("node-1"))
		if err == nil || !strings.Contains(err.Error(), "trunks") {
			t.Fatalf("metadata %v, error %v; want an error naming the trunks", md, err)
		}
	})
	t.Run("a 404 (no trunk extension) publishes the server's addresses as before", func(t *testing.T) {
		sim, cloud, _ := trunkSim(t, "")
		if err := sim.SetFault(cloudsim.FaultRule{Service: "network", Operation: "trunks.list", Status: 404}); err != nil {
			t.Fatal(err)
		}
		md, err := cloud.instances.InstanceMetadata(context.Background(), simNode("node-1"))
		if err != nil {
			t.Fatal(err)
		}
		want := []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.11"}, {Type: corev1.NodeHostName, Address: "node-1"}}
		if !slices.Equal(md.NodeAddresses, want) {
			t.Fatalf("addresses %v, want %v", md.NodeAddresses, want)
		}
	})
}
