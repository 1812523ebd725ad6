package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// RealCloudIP is where the real OpenStack services listen inside the lab
// (the simulator has CloudIP).
const RealCloudIP = "198.18.254.2"

// RealCloudInfo is hack/realcloud's cloud.json: what the bring-up seeded.
type RealCloudInfo struct {
	AuthURL string `json:"auth_url"`
	Region  string `json:"region"`
	Admin   struct {
		Username, Password, Project string
	} `json:"admin"`
	Users map[string]struct {
		Password string   `json:"password"`
		Project  string   `json:"project"`
		Roles    []string `json:"roles"`
	} `json:"users"`
	Projects map[string]string `json:"projects"`
	Networks map[string]struct {
		ID       string `json:"id"`
		SubnetID string `json:"subnet_id"`
		CIDR     string `json:"cidr"`
	} `json:"networks"`
	Router struct {
		Name, ID string
	} `json:"router"`
	Image struct {
		Name, ID string
	} `json:"image"`
	Flavors               map[string]string `json:"flavors"`
	AvailabilityZones     []string          `json:"availability_zones"`
	ComputeHosts          []string          `json:"compute_hosts"`
	ApplicationCredential struct {
		ID, Name, Secret, User string
	} `json:"application_credential"`
	CloudsYAML string `json:"clouds_yaml"`
	Logs       string `json:"logs"`
}

// RealCloudScript is the bring-up harness, relative to the repository root.
const RealCloudScript = "hack/realcloud/realcloud.sh"

// StartRealCloud brings real OpenStack services up in the lab for the test
// (minutes: prefer one per package, see NewRealCloud) and stops every one
// of their processes when it ends.
func StartRealCloud(t testing.TB) *RealCloud {
	t.Helper()
	rc, stop, err := NewRealCloud()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return rc
}

// NewRealCloud runs hack/realcloud/realcloud.sh in the lab's namespace: it
// configures and starts MariaDB, RabbitMQ, OVN, Keystone, Glance, Placement,
// Nova (fake driver), Neutron (ML2/OVN) and Octavia (amphora-noop and OVN
// providers) with all state in a temporary directory, and seeds the lab's
// projects, users, networks, router, flavors and image. stop kills every
// process it started and removes the directory. A missing package, a port
// in use or a service that does not come up is an error naming it.
func NewRealCloud() (*RealCloud, func(), error) {
	if !InLab() {
		return nil, nil, fmt.Errorf("real cloud: refusing to start outside the lab's network namespace")
	}
	if err := AddAddress(RealCloudIP); err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp("", "stackward-realcloud-")
	if err != nil {
		return nil, nil, fmt.Errorf("real cloud: state directory: %w", err)
	}
	script := filepath.Join(RepoRoot(), RealCloudScript)
	stop := func() {
		if out, err := realCloudScript(script, "down", dir); err != nil {
			fmt.Fprintf(os.Stderr, "real cloud: stop: %v\n%s", err, out)
		}
		if os.Getenv("STACKWARD_REALCLOUD_KEEP") == "" {
			os.RemoveAll(dir)
		} else {
			fmt.Fprintf(os.Stderr, "real cloud: state and logs kept in %s\n", dir)
		}
	}
	start := time.Now()
	if out, err := realCloudScript(script, "up", dir); err != nil {
		stop()
		return nil, nil, fmt.Errorf("real cloud: %s up: %w\n%s", script, err, out)
	}
	data, err := os.ReadFile(filepath.Join(dir, "cloud.json"))
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("real cloud: %w", err)
	}
	var info RealCloudInfo
	if err := json.Unmarshal(data, &info); err != nil {
		stop()
		return nil, nil, fmt.Errorf("real cloud: %s: %w", filepath.Join(dir, "cloud.json"), err)
	}
	rc, err := newRealCloud(context.Background(), dir, info)
	if err != nil {
		stop()
		return nil, nil, err
	}
	rc.StartupTime = time.Since(start)
	return rc, stop, nil
}

// realCloudScript runs the harness with the system PATH (a pyenv or venv
// python3 earlier in PATH lacks the OpenStack packages). The harness kills
// what it started if this process dies before stopping it.
func realCloudScript(script, cmd, dir string) (string, error) {
	c := exec.Command("bash", script, cmd, dir)
	c.Env = RealCloudEnv(RealCloudIP)
	out, err := c.CombinedOutput()
	return string(out), err
}

// RealCloudEnv is the whole environment the harness runs with, its
// listeners on ip.
func RealCloudEnv(ip string) []string {
	return []string{
		"PATH=/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=" + os.Getenv("HOME"),
		labEnv + "=1",
		"REALCLOUD_IP=" + ip,
		"REALCLOUD_REGION=" + LabRegion,
		fmt.Sprintf("REALCLOUD_OWNER_PID=%d", os.Getpid()),
	}
}
