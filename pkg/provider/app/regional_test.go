package app

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stackward/stackward/pkg/config"
	"github.com/stackward/stackward/pkg/openstack"
	"github.com/stackward/stackward/pkg/provider"
)

func TestRegionalProviderIDsFollowTheFlagElseOSCCMRegional(t *testing.T) {
	tests := []struct {
		name              string
		flagGiven, flag   bool
		env               string
		wantOn, wantEnv   bool
		wantIgnoredLogged bool
	}{
		{name: "neither: no region in providerIDs"},
		{name: "OS_CCM_REGIONAL=true turns it on, as upstream", env: "true", wantOn: true, wantEnv: true},
		{name: "OS_CCM_REGIONAL=True is not upstream's true and is logged", env: "True", wantIgnoredLogged: true},
		{name: "OS_CCM_REGIONAL=1 is not upstream's true and is logged", env: "1", wantIgnoredLogged: true},
		{name: "the flag alone turns it on", flagGiven: true, flag: true, wantOn: true},
		{name: "the flag set false wins over OS_CCM_REGIONAL=true", flagGiven: true, env: "true", wantIgnoredLogged: true},
		{name: "the flag set true wins over OS_CCM_REGIONAL=false", flagGiven: true, flag: true, env: "false", wantOn: true, wantIgnoredLogged: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := chooseRegionalProviderIDs(tt.flagGiven, tt.flag, tt.env)
			if got.on != tt.wantOn || got.fromEnv != tt.wantEnv || (got.ignored != "") != tt.wantIgnoredLogged {
				t.Errorf("got %+v; want on %t, from the environment %t, something ignored %t", got, tt.wantOn, tt.wantEnv, tt.wantIgnoredLogged)
			}
		})
	}
}

// oneServer is a Nova holding one server.
type oneServer struct{ s openstack.Server }

func (c oneServer) GetServer(_ context.Context, id string) (*openstack.Server, error) {
	if id != c.s.ID {
		return nil, openstack.ErrNotFound
	}
	s := c.s
	return &s, nil
}

func (c oneServer) ListServers(context.Context, openstack.ListServersOpts) ([]openstack.Server, error) {
	return []openstack.Server{c.s}, nil
}

// TestTheChosenFormIsTheProviderIDTheCCMWrites: through newCloud as the
// command runs it, the providerID a new Node gets for OS_CCM_REGIONAL
// (with and without a region in [Global]) and the flag.
func TestTheChosenFormIsTheProviderIDTheCCMWrites(t *testing.T) {
	const uuid = "8c7f2a4e-1b0d-4c55-9e3a-2f6d1c0b9a11"
	server := openstack.Server{ID: uuid, Name: "node-1", Status: "ACTIVE",
		Addresses: map[string][]openstack.ServerAddress{"private": {{Addr: "10.0.0.11", Version: 4, Type: "fixed"}}}}
	base := "[Global]\nauth-url = https://keystone.example:5000/v3\nusername = u\npassword = p\ntenant-name = demo\ndomain-name = Default\n"
	tests := []struct {
		name     string
		conf     string
		regional regionalChoice
		want     string
	}{
		{name: "OS_CCM_REGIONAL=true with a region", conf: base + "region = RegionOne\n", regional: chooseRegionalProviderIDs(false, false, "true"), want: "openstack://RegionOne/" + uuid},
		{name: "OS_CCM_REGIONAL=true without a region writes upstream's regionless form", conf: base, regional: chooseRegionalProviderIDs(false, false, "true"), want: "openstack:///" + uuid},
		{name: "the flag set false over OS_CCM_REGIONAL=true", conf: base + "region = RegionOne\n", regional: chooseRegionalProviderIDs(true, false, "true"), want: "openstack:///" + uuid},
		{name: "neither", conf: base + "region = RegionOne\n", want: "openstack:///" + uuid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := Options{NewClients: func(context.Context, *config.Config, openstack.ClientOptions) (*openstack.Clients, error) {
				return &openstack.Clients{Compute: oneServer{server}}, nil
			}}
			popts := provider.Options{RegionInProviderID: tt.regional.on}
			cloud, err := newCloud(context.Background(), "openstack", writeFile(t, tt.conf), popts, opts, tt.regional)
			if err != nil {
				t.Fatalf("newCloud: %v", err)
			}
			inst, _ := cloud.InstancesV2()
			md, err := inst.InstanceMetadata(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}})
			if err != nil {
				t.Fatalf("InstanceMetadata: %v", err)
			}
			if md.ProviderID != tt.want {
				t.Errorf("providerID = %q, want %q", md.ProviderID, tt.want)
			}
		})
	}
	t.Run("the flag without a region is an error", func(t *testing.T) {
		_, err := newCloud(context.Background(), "openstack", writeFile(t, base), provider.Options{RegionInProviderID: true},
			Options{NewClients: func(context.Context, *config.Config, openstack.ClientOptions) (*openstack.Clients, error) {
				return &openstack.Clients{Compute: oneServer{server}}, nil
			}}, chooseRegionalProviderIDs(true, true, ""))
		if err == nil {
			t.Fatal("newCloud succeeded")
		}
	})
}
