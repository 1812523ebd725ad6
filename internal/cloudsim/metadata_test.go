package cloudsim

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// metaData is the documented part of meta_data.json that stackward-node reads.
type metaData struct {
	UUID             string            `json:"uuid"`
	Name             string            `json:"name"`
	Hostname         string            `json:"hostname"`
	AvailabilityZone string            `json:"availability_zone"`
	ProjectID        string            `json:"project_id"`
	Meta             map[string]string `json:"meta"`
	PublicKeys       map[string]string `json:"public_keys"`
	Devices          []any             `json:"devices"`
}

type networkData struct {
	Links []struct {
		ID   string `json:"id"`
		MAC  string `json:"ethernet_mac_address"`
		VIF  string `json:"vif_id"`
		Type string `json:"type"`
	} `json:"links"`
	Networks []struct {
		Type      string `json:"type"`
		Link      string `json:"link"`
		IPAddress string `json:"ip_address"`
		Netmask   string `json:"netmask"`
		NetworkID string `json:"network_id"`
		Routes    []struct {
			Network, Netmask, Gateway string
		} `json:"routes"`
	} `json:"networks"`
	Services []struct {
		Type, Address string
	} `json:"services"`
}

func metadataSeed() *Seed {
	sd := testSeed()
	// A server owning 127.0.0.1 lets the test exercise selection by source address.
	sd.Networks = append(sd.Networks, SeedNetwork{Name: "loopback", Subnets: []SeedSubnet{{CIDR: "127.0.0.0/8", Gateway: "127.255.255.254"}}})
	sd.Servers = append(sd.Servers, ServerSpec{Name: "Local_VM", AZ: "az2", KeyName: "ops", PublicKey: "ssh-ed25519 AAAA test",
		UserData: "#cloud-config\n", Metadata: map[string]string{"k": "v"},
		NICs: []NICSpec{{Network: "loopback", FixedIP: "127.0.0.1"}, {Network: "private", FixedIP: "10.0.0.77"}}})
	return sd
}

func TestMetadataService(t *testing.T) {
	sim, authURL := startSim(t, Options{Seed: metadataSeed()})
	base := strings.TrimSuffix(authURL, "/v3")
	local, _ := sim.ServerByName("Local_VM")
	node, _ := sim.ServerByName("node-1")
	get := func(t *testing.T, path, instance string) (int, []byte) {
		req, _ := http.NewRequestWithContext(ctxT(t), "GET", base+path, nil)
		if instance != "" {
			req.Header.Set(InstanceHeader, instance)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	tests := []struct {
		name, path, instance string
		check                func(t *testing.T, code int, body []byte)
	}{
		{"the caller's source address selects its instance", "/openstack/latest/meta_data.json", "", func(t *testing.T, code int, b []byte) {
			var md metaData
			if err := json.Unmarshal(b, &md); err != nil || code != 200 {
				t.Fatalf("%d %s: %v", code, b, err)
			}
			if md.UUID != local.ID || md.Name != "Local_VM" || md.Hostname != "local-vm.novalocal" || md.AvailabilityZone != "az2" ||
				md.ProjectID != local.ProjectID || md.Meta["k"] != "v" || md.PublicKeys["ops"] != "ssh-ed25519 AAAA test" || md.Devices == nil {
				t.Fatalf("meta_data = %+v", md)
			}
		}},
		{"the header selects another instance", "/openstack/latest/meta_data.json", node.ID, func(t *testing.T, code int, b []byte) {
			var md metaData
			if err := json.Unmarshal(b, &md); err != nil || md.UUID != node.ID || md.AvailabilityZone != "nova" {
				t.Fatalf("meta_data = %+v, %v", md, err)
			}
		}},
		{"network_data lists links, networks with routes, and services", "/openstack/latest/network_data.json", "", func(t *testing.T, code int, b []byte) {
			var nd networkData
			if err := json.Unmarshal(b, &nd); err != nil {
				t.Fatal(err)
			}
			if len(nd.Links) != 2 || len(nd.Networks) != 2 || nd.Networks[1].IPAddress != "10.0.0.77" || nd.Networks[1].Netmask != "255.255.255.0" ||
				nd.Networks[0].Link != nd.Links[0].ID || len(nd.Networks[0].Routes) != 1 || len(nd.Services) != 1 || nd.Links[0].VIF != local.PortIDs[0] {
				t.Fatalf("network_data = %+v", nd)
			}
		}},
		{"user_data is served raw", "/openstack/latest/user_data", "", func(t *testing.T, code int, b []byte) {
			if code != 200 || string(b) != "#cloud-config\n" {
				t.Fatalf("%d %q", code, b)
			}
		}},
		{"EC2 meta-data serves keys", "/latest/meta-data/placement/availability-zone", "", func(t *testing.T, code int, b []byte) {
			if string(b) != "az2" {
				t.Fatalf("%d %q", code, b)
			}
		}},
		{"EC2 meta-data lists directories", "/latest/meta-data/", "", func(t *testing.T, code int, b []byte) {
			if !strings.Contains(string(b), "local-ipv4") || !strings.Contains(string(b), "placement/") {
				t.Fatalf("%d %q", code, b)
			}
		}},
		{"an unknown instance is a 404", "/openstack/latest/meta_data.json", "nope", func(t *testing.T, code int, b []byte) {
			if code != 404 {
				t.Fatalf("%d %q", code, b)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := get(t, tt.path, tt.instance)
			tt.check(t, code, body)
		})
	}
}

func TestConfigDrive(t *testing.T) {
	sim, _ := startSim(t, Options{Seed: metadataSeed()})
	local, _ := sim.ServerByName("Local_VM")
	dir := t.TempDir()
	if err := sim.WriteConfigDrive(local.ID, dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "openstack/latest/meta_data.json"))
	if err != nil {
		t.Fatal(err)
	}
	var md metaData
	if err := json.Unmarshal(b, &md); err != nil || md.UUID != local.ID {
		t.Fatalf("config drive meta_data = %+v, %v", md, err)
	}
	for _, f := range []string{"openstack/latest/network_data.json", "openstack/latest/user_data", "ec2/latest/meta-data.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
	if err := sim.WriteConfigDrive("nope", dir); err == nil {
		t.Fatal("a config drive for an unknown server was written")
	}
}
