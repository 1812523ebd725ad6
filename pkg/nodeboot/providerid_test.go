package nodeboot

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stackward/stackward/internal/cloudsim"
	"github.com/stackward/stackward/pkg/approver"
	"github.com/stackward/stackward/pkg/config"
	"github.com/stackward/stackward/pkg/openstack"
	"github.com/stackward/stackward/pkg/provider"
)

// TestEveryComponentAgreesOnTheProviderIDForm: for one server,
// stackward-node (with --region or without) writes the providerID the CCM
// writes (with --provider-id-with-region, or OS_CCM_REGIONAL=true, or
// neither), and the CCM's instance lookup and the approver's find that
// server by it. A Node whose kubelet was given the providerID before the
// CCM saw it must not be a stranger to either.
func TestEveryComponentAgreesOnTheProviderIDForm(t *testing.T) {
	sd := cloudsim.DefaultSeed()
	sd.Servers = []cloudsim.ServerSpec{{Name: "node-1", Flavor: "m1.small", NICs: []cloudsim.NICSpec{{Network: "private", FixedIP: "10.0.0.11"}}}}
	sim, err := cloudsim.New(cloudsim.Options{Seed: sd, RandSeed: 1, Region: "RegionTwo"})
	if err != nil {
		t.Fatal(err)
	}
	authURL, stop, err := sim.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	sv, ok := sim.ServerByName("node-1")
	if !ok {
		t.Fatal("no server node-1 in the simulator")
	}
	ctx := context.Background()
	cfg := config.Defaults()
	cfg.Global = config.Global{AuthURL: authURL, Username: "demo", Password: "secret", DomainName: "Default", TenantName: "demo", Region: "RegionTwo"}
	clients, err := openstack.NewClients(ctx, cfg, openstack.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	approverCloud := approver.NewOpenStackCloud(clients.Compute, clients.Ownership, cfg.Global.Region, clients.ProjectID, approver.CloudOptions{Window: -1})

	for _, tt := range []struct {
		name       string
		nodeRegion string // stackward-node --region
		regional   bool   // the CCM's --provider-id-with-region or OS_CCM_REGIONAL=true
		want       string
	}{
		{name: "regional", nodeRegion: "RegionTwo", regional: true, want: "openstack://RegionTwo/" + sv.ID},
		{name: "without a region", want: "openstack:///" + sv.ID},
	} {
		t.Run(tt.name, func(t *testing.T) {
			nodeCfg := testConfig(strings.TrimSuffix(authURL, "/v3")) // the metadata service is served beside the APIs
			nodeCfg.MetadataInstanceID = sv.ID
			nodeCfg.Region = tt.nodeRegion
			s, err := Resolve(ctx, nodeCfg)
			if err != nil {
				t.Fatalf("stackward-node: %v", err)
			}
			if s.ProviderID != tt.want {
				t.Errorf("stackward-node writes %q, want %q", s.ProviderID, tt.want)
			}

			ccm, err := provider.New(cfg, clients, provider.Options{RegionInProviderID: tt.regional})
			if err != nil {
				t.Fatal(err)
			}
			inst, _ := ccm.InstancesV2()
			md, err := inst.InstanceMetadata(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}})
			if err != nil {
				t.Fatalf("CCM: %v", err)
			}
			if md.ProviderID != s.ProviderID {
				t.Errorf("the CCM writes %q, stackward-node %q", md.ProviderID, s.ProviderID)
			}

			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Spec: corev1.NodeSpec{ProviderID: s.ProviderID}}
			if exists, err := inst.InstanceExists(ctx, node); err != nil || !exists {
				t.Errorf("the CCM's lookup of %s: exists %t, %v", s.ProviderID, exists, err)
			}
			found, err := approverCloud.InstanceForNode(ctx, s.ProviderID, "node-1", nil)
			if err != nil || found.Server == nil || found.Server.ID != sv.ID {
				t.Errorf("the approver's lookup of %s: %+v, %v", s.ProviderID, found, err)
			}
		})
	}
	t.Run("another region's providerID is refused by both, never as not found", func(t *testing.T) {
		other := openstack.ProviderID("RegionOne", sv.ID)
		ccm, err := provider.New(cfg, clients, provider.Options{RegionInProviderID: true})
		if err != nil {
			t.Fatal(err)
		}
		inst, _ := ccm.InstancesV2()
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Spec: corev1.NodeSpec{ProviderID: other}}
		if exists, err := inst.InstanceExists(ctx, node); err == nil {
			t.Errorf("the CCM's lookup of %s: exists %t, want an error", other, exists)
		}
		if _, err := approverCloud.InstanceForNode(ctx, other, "node-1", nil); err == nil || openstack.IsNotFound(err) {
			t.Errorf("the approver's lookup of %s: %v, want an error other than not found", other, err)
		}
	})
}
