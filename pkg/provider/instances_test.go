package provider

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/stackward/stackward/internal/openstacktest"
	"github.com/stackward/stackward/pkg/config"
	"github.com/stackward/stackward/pkg/openstack"
)

const (
	web1ID = "6f5c1a2e-8d0b-4c47-9a51-0e6b2f0c1a01"
	web2ID = "6f5c1a2e-8d0b-4c47-9a51-0e6b2f0c1a02"
	dupAID = "6f5c1a2e-8d0b-4c47-9a51-0e6b2f0c1a0a"
	dupBID = "6f5c1a2e-8d0b-4c47-9a51-0e6b2f0c1a0b"
	goneID = "6f5c1a2e-8d0b-4c47-9a51-0e6b2f0c1aff"
)

func server(id, name, status string) openstack.Server {
	return openstack.Server{
		ID: id, Name: name, Status: status,
		FlavorName: "m1.large", AvailabilityZone: "nova",
		Addresses: map[string][]openstack.ServerAddress{
			"private": {
				{Addr: "10.0.0.5", Version: 4, Type: openstack.AddressFixed},
				{Addr: "203.0.113.5", Version: 4, Type: openstack.AddressFloating},
			},
		},
	}
}

// testServers is the project every test starts from.
func testServers() []openstack.Server {
	odd := server(web2ID, "web-2", openstack.StatusShutoff)
	odd.FlavorName = "m1.large/extra"
	odd.AvailabilityZone = "zone a:1"
	return []openstack.Server{
		server(web1ID, "web-1", openstack.StatusActive),
		odd,
		server(dupAID, "dup", openstack.StatusActive),
		server(dupBID, "dup", openstack.StatusActive),
		server(goneID, "gone", openstack.StatusDeleted),
	}
}

func testConfig() *config.Config {
	cfg := config.Defaults()
	cfg.Global.Region = "RegionOne"
	cfg.Global.TenantName = "demo"
	return cfg
}

func newTestCloud(t *testing.T, compute *openstacktest.Compute, opts Options) (*instances, *record.FakeRecorder) {
	t.Helper()
	cloud, err := New(testConfig(), &openstack.Clients{Compute: compute}, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	rec := record.NewFakeRecorder(10)
	cloud.instances.setRecorder(rec)
	v2, ok := cloud.InstancesV2()
	if !ok {
		t.Fatal("InstancesV2 not supported")
	}
	return v2.(*instances), rec
}

// newNode is a Node as the kubelet registers it; initialized means the
// cloud-node controller has already removed the uninitialized taint.
func newNode(name, providerID string, initialized bool) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.NodeSpec{ProviderID: providerID},
	}
	if !initialized {
		n.Spec.Taints = []corev1.Taint{{Key: cloudproviderapi.TaintExternalCloudProvider, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	}
	return n
}

func events(rec *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestInstanceMetadata(t *testing.T) {
	wantAddresses := []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: "10.0.0.5"},
		{Type: corev1.NodeExternalIP, Address: "203.0.113.5"},
		{Type: corev1.NodeHostName, Address: "web-1"},
	}
	tests := []struct {
		name     string
		node     *corev1.Node
		opts     Options
		cloudErr error
		// want is the metadata expected; nil when an error is expected.
		want *struct{ providerID, instanceType, zone string }
		// wantErr are substrings of the error; wantIs what it must wrap.
		wantErr   []string
		wantIs    error
		wantEvent string
	}{
		{
			name: "found by providerID",
			node: newNode("web-1", "openstack:///"+web1ID, false),
			want: &struct{ providerID, instanceType, zone string }{"openstack:///" + web1ID, "m1.large", "nova"},
		},
		{
			name: "found by name when the Node has no providerID",
			node: newNode("web-1", "", false),
			want: &struct{ providerID, instanceType, zone string }{"openstack:///" + web1ID, "m1.large", "nova"},
		},
		{
			name: "region in providerID when configured",
			node: newNode("web-1", "", false),
			opts: Options{RegionInProviderID: true},
			want: &struct{ providerID, instanceType, zone string }{"openstack://RegionOne/" + web1ID, "m1.large", "nova"},
		},
		{
			name: "a providerID with this cloud's region is found",
			node: newNode("web-1", "openstack://RegionOne/"+web1ID, false),
			want: &struct{ providerID, instanceType, zone string }{"openstack:///" + web1ID, "m1.large", "nova"},
		},
		{
			name: `flavor "m1.large/extra" and zone "zone a:1" are sanitized to label values`,
			node: newNode("web-2", "", false),
			want: &struct{ providerID, instanceType, zone string }{"openstack:///" + web2ID, "m1.large-extra", "zone-a-1"},
		},
		{
			name:      "no server with the node's name is not found, and the Event says why",
			node:      newNode("web-9", "", false),
			wantErr:   []string{`no server named "web-9" in project "demo"`, "looked up by exact name because the Node has no providerID"},
			wantIs:    openstack.ErrNotFound,
			wantEvent: "Warning InstanceNotFound no server named \"web-9\"",
		},
		{
			name:      "two servers with the same name is an error, never a guess",
			node:      newNode("dup", "", false),
			wantErr:   []string{`several servers named "dup"`, dupAID, dupBID},
			wantIs:    openstack.ErrAmbiguous,
			wantEvent: "Warning InstanceAmbiguous several servers named \"dup\"",
		},
		{
			name:      "a deleted server has no metadata",
			node:      newNode("gone", "openstack:///"+goneID, false),
			wantIs:    openstack.ErrNotFound,
			wantErr:   []string{"not found in the cloud"},
			wantEvent: "Warning InstanceNotFound",
		},
		{
			name:     "503 is an error, not not-found, and makes no Event",
			node:     newNode("web-1", "openstack:///"+web1ID, false),
			cloudErr: unavailable(),
			wantErr:  []string{"503"},
		},
		{
			name:    "a providerID of another region is an error, not not-found",
			node:    newNode("web-1", "openstack://RegionTwo/"+web1ID, false),
			wantErr: []string{`region "RegionTwo"`},
		},
		{
			name:    "a providerID of another cloud is an error, not not-found",
			node:    newNode("web-1", "aws:///i-0123", false),
			wantIs:  openstack.ErrInvalidProviderID,
			wantErr: []string{"aws:///i-0123"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			compute := newFakeCompute(testServers()...)
			compute.SetErr(tt.cloudErr)
			i, rec := newTestCloud(t, compute, tt.opts)

			md, err := i.InstanceMetadata(context.Background(), tt.node)

			if gets, lists := compute.Counts(); gets+lists > 2 {
				t.Errorf("InstanceMetadata made %d GETs and %d listings, want at most 2 calls", gets, lists)
			}
			gotEvents := events(rec)
			if tt.wantEvent == "" && len(gotEvents) > 0 {
				t.Errorf("events = %q, want none", gotEvents)
			}
			if tt.wantEvent != "" && (len(gotEvents) != 1 || !strings.HasPrefix(gotEvents[0], tt.wantEvent)) {
				t.Errorf("events = %q, want one starting with %q", gotEvents, tt.wantEvent)
			}
			if tt.want == nil {
				if err == nil {
					t.Fatalf("InstanceMetadata = %+v, want an error", md)
				}
				t.Logf("error: %v", err)
				for _, s := range tt.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not contain %q", err, s)
					}
				}
				if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
					t.Errorf("error %q does not wrap %v", err, tt.wantIs)
				}
				if !errors.Is(tt.wantIs, openstack.ErrNotFound) && openstack.IsNotFound(err) {
					t.Errorf("error %q is taken for not found", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("InstanceMetadata: %v", err)
			}
			if md.ProviderID != tt.want.providerID || md.InstanceType != tt.want.instanceType || md.Zone != tt.want.zone || md.Region != "RegionOne" {
				t.Errorf("metadata = {%q %q %q %q}, want {%q %q %q RegionOne}",
					md.ProviderID, md.InstanceType, md.Zone, md.Region, tt.want.providerID, tt.want.instanceType, tt.want.zone)
			}
			if tt.node.Name == "web-1" && !reflect.DeepEqual(md.NodeAddresses, wantAddresses) {
				t.Errorf("addresses = %v, want %v", md.NodeAddresses, wantAddresses)
			}
		})
	}
}

func TestInstanceExistsAndShutdown(t *testing.T) {
	tests := []struct {
		name         string
		node         *corev1.Node
		cloudErr     error
		wantExists   bool
		wantShutdown bool
		wantErr      bool
		// shutdownOK: InstanceShutdown answers (false) where InstanceExists errs.
		shutdownOK bool
	}{
		{name: "a running server found by providerID exists", node: newNode("web-1", "openstack:///"+web1ID, true), wantExists: true},
		{name: "a running server found by name exists", node: newNode("web-1", "", true), wantExists: true},
		{name: "SHUTOFF is shutdown", node: newNode("web-2", "openstack:///"+web2ID, true), wantExists: true, wantShutdown: true},
		{name: "a server Nova does not know does not exist", node: newNode("old", "openstack:///"+strings.Repeat("0", 8), true)},
		{name: "deleted server does not exist", node: newNode("gone", "openstack:///"+goneID, true)},
		{name: "a node never matched to a server is an error, never deleted as missing", node: newNode("web-9", "", true), wantErr: true, shutdownOK: true},
		{name: "two servers with the node's name is an error", node: newNode("dup", "", true), wantErr: true},
		{name: "503 is an error, not not-found", node: newNode("web-1", "openstack:///"+web1ID, true), cloudErr: unavailable(), wantErr: true},
		{name: "503 on a name lookup is an error, not not-found", node: newNode("web-1", "", true), cloudErr: unavailable(), wantErr: true},
		{name: "an unparsable providerID is an error", node: newNode("web-1", "openstack:///a/b", true), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			compute := newFakeCompute(testServers()...)
			compute.SetErr(tt.cloudErr)
			i, _ := newTestCloud(t, compute, Options{})
			ctx := context.Background()

			exists, err := i.InstanceExists(ctx, tt.node)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("InstanceExists = %v, want an error", exists)
				}
				if openstack.IsNotFound(err) {
					t.Fatalf("InstanceExists error %q is taken for not found", err)
				}
			} else if err != nil || exists != tt.wantExists {
				t.Fatalf("InstanceExists = %v, %v; want %v", exists, err, tt.wantExists)
			}

			shutdown, err := i.InstanceShutdown(ctx, tt.node)
			if tt.wantErr && !tt.shutdownOK {
				if err == nil {
					t.Fatalf("InstanceShutdown = %v, want an error", shutdown)
				}
				return
			}
			if err != nil || shutdown != tt.wantShutdown {
				t.Fatalf("InstanceShutdown = %v, %v; want %v", shutdown, err, tt.wantShutdown)
			}
		})
	}
}

// Initializing N joining nodes, the periodic address sync and the lifecycle
// checks share one servers/detail listing instead of making N GETs.
func TestLookupsOfManyNodesShareOneListing(t *testing.T) {
	const n = 50
	var servers []openstack.Server
	for k := range n {
		servers = append(servers, server(fmt.Sprintf("6f5c1a2e-8d0b-4c47-9a51-%012d", k), fmt.Sprintf("node-%d", k), openstack.StatusActive))
	}
	compute := newFakeCompute(servers...)
	i, _ := newTestCloud(t, compute, Options{})
	ctx := context.Background()

	for _, s := range servers {
		// Joining without a providerID, then initialized with one.
		md, err := i.InstanceMetadata(ctx, newNode(s.Name, "", false))
		if err != nil {
			t.Fatalf("InstanceMetadata(%s): %v", s.Name, err)
		}
		node := newNode(s.Name, md.ProviderID, true)
		if _, err := i.InstanceMetadata(ctx, node); err != nil {
			t.Fatalf("InstanceMetadata(%s) after initialization: %v", s.Name, err)
		}
		if exists, err := i.InstanceExists(ctx, node); err != nil || !exists {
			t.Fatalf("InstanceExists(%s) = %v, %v", s.Name, exists, err)
		}
	}
	if gets, lists := compute.Counts(); gets != 0 || lists != 1 {
		t.Fatalf("%d nodes cost %d GETs and %d listings, want 0 GETs and 1 listing", n, gets, lists)
	}
}

// A server created after the last listing is not taken for missing: it is
// asked of Nova at once, one more call.
func TestServerCreatedAfterTheListingIsFound(t *testing.T) {
	compute := newFakeCompute(testServers()...)
	i, _ := newTestCloud(t, compute, Options{})
	ctx := context.Background()
	if _, err := i.InstanceMetadata(ctx, newNode("web-1", "", false)); err != nil {
		t.Fatalf("InstanceMetadata(web-1): %v", err)
	}
	const newID = "6f5c1a2e-8d0b-4c47-9a51-0e6b2f0c1a03"
	compute.Put(server(newID, "web-3", openstack.StatusActive))
	gets0, lists0 := compute.Counts()

	for _, node := range []*corev1.Node{newNode("web-3", "openstack:///"+newID, false), newNode("web-3", "", false)} {
		md, err := i.InstanceMetadata(ctx, node)
		if err != nil {
			t.Fatalf("InstanceMetadata(web-3, providerID %q): %v", node.Spec.ProviderID, err)
		}
		if md.ProviderID != "openstack:///"+newID {
			t.Errorf("ProviderID = %q, want the new server's", md.ProviderID)
		}
		if exists, err := i.InstanceExists(ctx, node); err != nil || !exists {
			t.Errorf("InstanceExists(web-3, providerID %q) = %v, %v; want true", node.Spec.ProviderID, exists, err)
		}
	}
	gets, lists := compute.Counts()
	if calls := gets - gets0 + lists - lists0; calls != 4 {
		t.Errorf("4 lookups of a server missing from the listing cost %d calls, want 4 direct ones", calls)
	}
}

func TestNewRejectsIncompleteInput(t *testing.T) {
	noRegion := testConfig()
	noRegion.Global.Region = ""
	slashRegion := testConfig()
	slashRegion.Global.Region = "eu/west"
	tests := []struct {
		name    string
		cfg     *config.Config
		clients *openstack.Clients
		opts    Options
		wantErr string
	}{
		{name: "no config is an error", clients: &openstack.Clients{Compute: newFakeCompute()}, wantErr: "no cloud config"},
		{name: "no compute client is an error", cfg: testConfig(), clients: &openstack.Clients{}, wantErr: "no compute client"},
		{name: "region in providerID without a region is an error", cfg: noRegion, clients: &openstack.Clients{Compute: newFakeCompute()}, opts: Options{RegionInProviderID: true}, wantErr: "region"},
		{name: "a region that would not parse back out of a providerID is an error", cfg: slashRegion, clients: &openstack.Clients{Compute: newFakeCompute()}, opts: Options{RegionInProviderID: true}, wantErr: `region "eu/west" cannot be part of a providerID`},
		{name: "a negative cache TTL is an error", cfg: testConfig(), clients: &openstack.Clients{Compute: newFakeCompute()}, opts: Options{ServerCacheTTL: -1}, wantErr: "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg, tt.clients, tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("New error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestCloudInterface(t *testing.T) {
	cloud, err := New(testConfig(), &openstack.Clients{Compute: newFakeCompute()}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if cloud.ProviderName() != "openstack" || !cloud.HasClusterID() {
		t.Errorf("ProviderName = %q, HasClusterID = %v", cloud.ProviderName(), cloud.HasClusterID())
	}
	if _, ok := cloud.Instances(); ok {
		t.Error("Instances (v1) is supported, want only InstancesV2")
	}
	if _, ok := cloud.Zones(); ok {
		t.Error("Zones is supported, want zone from InstancesV2")
	}
	if _, ok := cloud.LoadBalancer(); ok {
		t.Error("LoadBalancer is supported before it is implemented")
	}
	if _, ok := cloud.Routes(); ok {
		t.Error("Routes is supported before it is implemented")
	}
	if _, ok := cloud.InstancesV2(); !ok {
		t.Error("InstancesV2 is not supported")
	}
}
