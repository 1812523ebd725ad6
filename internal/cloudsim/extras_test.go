package cloudsim

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/attachinterfaces"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
)

func TestInterfaceAttachAndDetach(t *testing.T) {
	sim, authURL := startSim(t, Options{})
	compute := computeClient(t, authURL)
	ctx := ctxT(t)
	node, _ := sim.ServerByName("node-2")
	sim.mu.RLock()
	publicID := sim.state.networkRef("public").ID
	sim.mu.RUnlock()

	att, err := attachinterfaces.Create(ctx, compute, node.ID, attachinterfaces.CreateOpts{NetworkID: publicID,
		FixedIPs: []attachinterfaces.FixedIP{{IPAddress: "203.0.113.77"}}}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	t.Run("an attached interface adds an address on its network", func(t *testing.T) {
		got, _ := sim.GetServer(node.ID)
		if len(got.Addresses) != 2 || got.Addresses[1].Network != "public" || got.Addresses[1].IP != "203.0.113.77" {
			t.Fatalf("addresses = %+v", got.Addresses)
		}
	})
	t.Run("an address in use cannot be attached twice", func(t *testing.T) {
		_, err := attachinterfaces.Create(ctx, compute, node.ID, attachinterfaces.CreateOpts{NetworkID: publicID,
			FixedIPs: []attachinterfaces.FixedIP{{IPAddress: "203.0.113.77"}}}).Extract()
		if !gophercloud.ResponseCodeIs(err, 409) {
			t.Fatalf("want 409, got %v", err)
		}
	})
	t.Run("a detached interface takes its address away", func(t *testing.T) {
		if err := attachinterfaces.Delete(ctx, compute, node.ID, att.PortID).ExtractErr(); err != nil {
			t.Fatal(err)
		}
		if got, _ := sim.GetServer(node.ID); len(got.Addresses) != 1 {
			t.Fatalf("addresses = %+v", got.Addresses)
		}
	})
}

func TestSecurityGroups(t *testing.T) {
	_, authURL := startSim(t, Options{})
	net := networkClient(t, authURL)
	ctx := ctxT(t)
	sg, err := groups.Create(ctx, net, groups.CreateOpts{Name: "lb-nodes"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	rule := rules.CreateOpts{Direction: rules.DirIngress, EtherType: rules.EtherType4, SecGroupID: sg.ID,
		Protocol: rules.ProtocolTCP, PortRangeMin: 30000, PortRangeMax: 32767, RemoteIPPrefix: "10.0.0.0/24"}
	steps := []struct {
		name string
		run  func() error
		want int
	}{
		{"a new group has the default egress rules", func() error {
			g, err := groups.Get(ctx, net, sg.ID).Extract()
			if err == nil && len(g.Rules) != 2 {
				t.Fatalf("rules = %+v", g.Rules)
			}
			return err
		}, 0},
		{"a rule is added", func() error { _, err := rules.Create(ctx, net, rule).Extract(); return err }, 0},
		{"the same rule again is a 409", func() error { _, err := rules.Create(ctx, net, rule).Extract(); return err }, 409},
		{"the group lists the rule", func() error {
			g, err := groups.Get(ctx, net, sg.ID).Extract()
			if err == nil && (len(g.Rules) != 3 || g.Rules[2].PortRangeMin != 30000) {
				t.Fatalf("rules = %+v", g.Rules)
			}
			return err
		}, 0},
		{"the group is deleted with its rules", func() error { return groups.Delete(ctx, net, sg.ID).ExtractErr() }, 0},
		{"and is gone", func() error { _, err := groups.Get(ctx, net, sg.ID).Extract(); return err }, 404},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			err := st.run()
			if st.want == 0 && err != nil {
				t.Fatal(err)
			}
			if st.want != 0 && !gophercloud.ResponseCodeIs(err, st.want) {
				t.Fatalf("want %d, got %v", st.want, err)
			}
		})
	}
}

func TestMetricsEndpoint(t *testing.T) {
	_, authURL := startSim(t, Options{})
	provider(t, demoAuth(authURL))
	resp, err := http.Get(strings.TrimSuffix(authURL, "/v3") + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	want := `stackward_cloudsim_requests_total{code="201",operation="tokens.create",service="identity"} 1`
	if !strings.Contains(string(b), want) {
		t.Fatalf("/metrics lacks %q:\n%s", want, b)
	}
}
