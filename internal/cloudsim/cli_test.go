package cloudsim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The OpenStack CLI (python3-openstackclient and python3-octaviaclient, as
// Debian packages them) against the simulator: every row is a command an
// operator types, its -f json output checked against the simulator's
// state. .ci/run installs the CLI and sets STACKWARD_REQUIRE_OPENSTACK_CLI,
// so in CI a missing CLI fails the test instead of skipping it.

type cliRow struct {
	name  string
	cloud string          // clouds.yaml entry; "" is the member user
	args  func() []string // after "openstack"; -f json is added to rows with a check
	// fails, when set, is what stderr must say: the command must fail.
	fails string
	check func(t *testing.T, out any)
}

func TestOpenStackCLIAgainstTheSimulator(t *testing.T) {
	osc, err := exec.LookPath("openstack")
	if err != nil {
		if os.Getenv("STACKWARD_REQUIRE_OPENSTACK_CLI") != "" {
			t.Fatalf("STACKWARD_REQUIRE_OPENSTACK_CLI is set but the openstack CLI is not on PATH: %v", err)
		}
		t.Skip("the openstack CLI is not installed (apt-get install python3-openstackclient python3-octaviaclient); CI requires it")
	}
	sd := DefaultSeed()
	sd.Servers = []ServerSpec{{Name: "web-1", Flavor: "m1.medium", NICs: []NICSpec{{Network: "private", FixedIP: "10.0.0.21"}}}}
	sim, authURL := startSim(t, Options{Seed: sd})
	dir := t.TempDir()
	clouds := ExampleCloudsYAML(sd, authURL, "RegionOne")
	viewer := strings.NewReplacer("cloudsim:", "viewer:", `"demo"`+"\n      password: \"secret\"", `"viewer"`+"\n      password: \"viewer-secret\"").
		Replace(strings.SplitN(clouds, "clouds:\n", 2)[1])
	if err := os.WriteFile(filepath.Join(dir, "clouds.yaml"), []byte(clouds+viewer), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "OS_CLIENT_CONFIG_FILE="+filepath.Join(dir, "clouds.yaml"), "HOME="+dir, "XDG_CACHE_HOME="+dir)

	web, _ := sim.ServerByName("web-1")
	var st *state
	// read runs fn with the simulator's state locked. The write lock, not
	// the read lock: the reads run in parallel and each sets st.
	read := func(fn func()) {
		sim.mu.Lock()
		defer sim.mu.Unlock()
		st = sim.state
		fn()
	}
	var webPort, fipID, lbID, listenerID, poolID, memberID, monitorID string
	read(func() { webPort = st.portsByDev[web.ID][0] })
	router := func() *router { return st.routers.first() }
	subnetOf := func(name string) string {
		var id string
		read(func() { id = st.networkRef(name).SubnetIDs[0] })
		return id
	}
	static := func(a ...string) func() []string { return func() []string { return a } }

	reads := []cliRow{
		{name: "token issue is scoped to the demo project", args: static("token", "issue"), check: func(t *testing.T, out any) {
			read(func() { wantEq(t, field(out, "project_id"), st.projectRef("demo").ID) })
		}},
		{name: "catalog list names every service", args: static("catalog", "list"), check: func(t *testing.T, out any) {
			wantEq(t, strings.Join(column(out, "Type"), ","), "identity,compute,network,load-balancer,image,key-manager")
		}},
		{name: "server list", args: static("server", "list"), check: func(t *testing.T, out any) {
			wantEq(t, strings.Join(column(out, "Name"), ","), "web-1")
		}},
		{name: "server list --long resolves the image through Glance", args: static("server", "list", "--long"), check: func(t *testing.T, out any) {
			row := rowOf(out, 0)
			wantEq(t, fmt.Sprint(row["Image Name"], " ", row["Flavor Name"], " ", row["Availability Zone"]), "debian-12 m1.medium nova")
		}},
		{name: "server show", args: static("server", "show", "web-1"), check: func(t *testing.T, out any) {
			wantEq(t, fmt.Sprint(field(out, "id"), " ", field(out, "addresses")), web.ID+" map[private:[10.0.0.21]]")
		}},
		{name: "flavor list reads os-extra_specs", args: static("flavor", "list"), check: func(t *testing.T, out any) {
			wantEq(t, strings.Join(column(out, "Name"), ","), "m1.small,m1.medium,m1.large")
		}},
		{name: "flavor show", args: static("flavor", "show", "m1.large"), check: func(t *testing.T, out any) {
			wantEq(t, fmt.Sprint(field(out, "ram"), " ", field(out, "vcpus")), "8192 4")
		}},
		{name: "image list", args: static("image", "list"), check: func(t *testing.T, out any) {
			read(func() { wantEq(t, strings.Join(column(out, "ID"), ","), st.images.first().ID) })
		}},
		{name: "availability zone list", args: static("availability", "zone", "list", "--compute"), check: func(t *testing.T, out any) {
			wantEq(t, strings.Join(column(out, "Zone Name"), ","), "nova")
		}},
		{name: "network list", args: static("network", "list"), check: func(t *testing.T, out any) {
			wantEq(t, strings.Join(column(out, "Name"), ","), "private,public")
		}},
		{name: "network show", args: static("network", "show", "public"), check: func(t *testing.T, out any) {
			wantEq(t, fmt.Sprint(field(out, "router:external"), " ", field(out, "subnets")), "true ["+subnetOf("public")+"]")
		}},
		{name: "subnet list", args: static("subnet", "list"), check: func(t *testing.T, out any) {
			wantEq(t, strings.Join(column(out, "Subnet"), ","), "10.0.0.0/24,203.0.113.0/24")
		}},
		{name: "subnet show", args: static("subnet", "show", "private-subnet"), check: func(t *testing.T, out any) {
			wantEq(t, fmt.Sprint(field(out, "cidr"), " ", field(out, "gateway_ip")), "10.0.0.0/24 10.0.0.1")
		}},
		{name: "port list of a server", args: static("port", "list", "--server", "web-1"), check: func(t *testing.T, out any) {
			wantEq(t, strings.Join(column(out, "ID"), ","), webPort)
		}},
		{name: "router list", args: static("router", "list"), check: func(t *testing.T, out any) {
			wantEq(t, strings.Join(column(out, "Name"), ","), "router1")
		}},
		{name: "security group show", args: static("security", "group", "show", "default"), check: func(t *testing.T, out any) {
			rules, _ := field(out, "rules").([]any)
			wantEq(t, fmt.Sprint(len(rules)), "4")
		}},
		{name: "extension list", args: static("extension", "list", "--network"), check: func(t *testing.T, out any) {
			if !slices.Contains(column(out, "Alias"), "extraroute-atomic") {
				t.Errorf("extensions: %v", column(out, "Alias"))
			}
		}},
		{name: "quota show", args: static("quota", "show"), check: func(t *testing.T, out any) {
			wantEq(t, fmt.Sprint(field(out, "instances"), " ", field(out, "ports")), fmt.Sprint(novaQuota["instances"], " ", neutronQuota["port"]))
		}},
		{name: "a reader cannot create a network", cloud: "viewer", args: static("network", "create", "n-1"),
			fails: "rule:create_network is disallowed by policy"},
		{name: "a service the cloud does not have fails as on a cloud without it", args: static("volume", "list"),
			fails: "public endpoint for volumev3 service in RegionOne region not found"},
	}
	// Changes run in order: each row's check reads what the rows before made.
	changes := []cliRow{
		{name: "floating ip create", args: static("floating", "ip", "create", "public"), check: func(t *testing.T, out any) {
			fipID = fmt.Sprint(field(out, "id"))
			read(func() {
				f, ok := st.fips.get(fipID)
				wantEq(t, fmt.Sprint(ok, " ", f != nil && f.IP == field(out, "floating_ip_address")), "true true")
			})
		}},
		{name: "floating ip set --port", args: func() []string { return []string{"floating", "ip", "set", "--port", webPort, fipID} }, check: func(t *testing.T, _ any) {
			read(func() { wantEq(t, st.fips.byID[fipID].PortID, webPort) })
		}},
		{name: "floating ip unset --port", args: func() []string { return []string{"floating", "ip", "unset", "--port", fipID} }, check: func(t *testing.T, _ any) {
			read(func() { wantEq(t, st.fips.byID[fipID].PortID, "") })
		}},
		{name: "floating ip delete", args: func() []string { return []string{"floating", "ip", "delete", fipID} }, check: func(t *testing.T, _ any) {
			read(func() { _, ok := st.fips.get(fipID); wantEq(t, fmt.Sprint(ok), "false") })
		}},
		{name: "port set --allowed-address", args: func() []string {
			return []string{"port", "set", "--allowed-address", "ip-address=10.244.1.0/24", webPort}
		}, check: func(t *testing.T, _ any) {
			read(func() { wantEq(t, fmt.Sprint(st.ports.byID[webPort].AllowedPairs), "[{10.244.1.0/24 }]") })
		}},
		{name: "router add route", args: static("router", "add", "route", "--route", "destination=10.244.1.0/24,gateway=10.0.0.21", "router1"), check: func(t *testing.T, _ any) {
			read(func() { wantEq(t, fmt.Sprint(router().Routes), "[{10.244.1.0/24 10.0.0.21}]") })
		}},
		{name: "router remove route", args: static("router", "remove", "route", "--route", "destination=10.244.1.0/24,gateway=10.0.0.21", "router1"), check: func(t *testing.T, _ any) {
			read(func() { wantEq(t, fmt.Sprint(len(router().Routes)), "0") })
		}},
		{name: "loadbalancer create --wait", args: func() []string {
			return []string{"loadbalancer", "create", "--name", "lb-1", "--vip-subnet-id", subnetOf("private"), "--wait"}
		}, check: func(t *testing.T, out any) {
			lbID = fmt.Sprint(field(out, "id"))
			read(func() {
				lb := st.lb.lbs.byID[lbID]
				wantEq(t, fmt.Sprint(lb.Prov, " ", lb.VIPAddress), "ACTIVE "+fmt.Sprint(field(out, "vip_address")))
			})
		}},
		{name: "loadbalancer show", args: static("loadbalancer", "show", "lb-1"), check: func(t *testing.T, out any) {
			wantEq(t, fmt.Sprint(field(out, "id"), " ", field(out, "provisioning_status")), lbID+" ACTIVE")
		}},
		{name: "loadbalancer listener create", args: static("loadbalancer", "listener", "create", "--name", "l-1", "--protocol", "TCP", "--protocol-port", "80", "--wait", "lb-1"), check: func(t *testing.T, out any) {
			listenerID = fmt.Sprint(field(out, "id"))
			read(func() { wantEq(t, fmt.Sprint(st.lb.listeners.byID[listenerID].Port), "80") })
		}},
		{name: "loadbalancer pool create", args: static("loadbalancer", "pool", "create", "--name", "p-1", "--listener", "l-1", "--protocol", "TCP", "--lb-algorithm", "ROUND_ROBIN", "--wait"), check: func(t *testing.T, out any) {
			poolID = fmt.Sprint(field(out, "id"))
			read(func() { wantEq(t, st.lb.listeners.byID[listenerID].DefaultPoolID, poolID) })
		}},
		{name: "loadbalancer member create", args: static("loadbalancer", "member", "create", "--address", "10.0.0.21", "--protocol-port", "8080", "--wait", "p-1"), check: func(t *testing.T, out any) {
			memberID = fmt.Sprint(field(out, "id"))
			read(func() {
				m := st.lb.members.byID[memberID]
				wantEq(t, fmt.Sprint(m.PoolID == poolID, " ", m.Address), "true 10.0.0.21")
			})
		}},
		{name: "loadbalancer healthmonitor create", args: static("loadbalancer", "healthmonitor", "create", "--delay", "5", "--timeout", "3", "--max-retries", "2", "--type", "TCP", "--wait", "p-1"), check: func(t *testing.T, out any) {
			monitorID = fmt.Sprint(field(out, "id"))
			read(func() { wantEq(t, st.lb.pools.byID[poolID].MonitorID, monitorID) })
		}},
		{name: "loadbalancer status show", args: static("loadbalancer", "status", "show", "lb-1"), check: func(t *testing.T, out any) {
			lb, _ := field(out, "loadbalancer").(map[string]any)
			wantEq(t, fmt.Sprint(lb["id"], " ", len(lb["listeners"].([]any))), lbID+" 1")
		}},
		{name: "loadbalancer stats show", args: static("loadbalancer", "stats", "show", "lb-1"), check: func(t *testing.T, out any) {
			wantEq(t, fmt.Sprint(field(out, "total_connections")), "0")
		}},
		{name: "loadbalancer healthmonitor delete", args: func() []string { return []string{"loadbalancer", "healthmonitor", "delete", "--wait", monitorID} }, check: func(t *testing.T, _ any) {
			read(func() { _, ok := st.lb.monitors.get(monitorID); wantEq(t, fmt.Sprint(ok), "false") })
		}},
		{name: "loadbalancer member delete", args: func() []string { return []string{"loadbalancer", "member", "delete", "--wait", "p-1", memberID} }, check: func(t *testing.T, _ any) {
			read(func() { _, ok := st.lb.members.get(memberID); wantEq(t, fmt.Sprint(ok), "false") })
		}},
		{name: "loadbalancer delete --cascade --wait sends cascade=True", args: static("loadbalancer", "delete", "--cascade", "--wait", "lb-1"), check: func(t *testing.T, _ any) {
			read(func() {
				_, lb := st.lb.lbs.get(lbID)
				_, pool := st.lb.pools.get(poolID)
				_, l := st.lb.listeners.get(listenerID)
				wantEq(t, fmt.Sprint(lb, pool, l), "false false false")
			})
		}},
		{name: "loadbalancer list shows it gone", args: static("loadbalancer", "list"), check: func(t *testing.T, out any) {
			wantEq(t, fmt.Sprint(len(column(out, "id"))), "0")
		}},
	}

	start := time.Now()
	// Reads do not depend on each other: two at a time (CPU-bound Python).
	t.Run("reads", func(t *testing.T) {
		sem := make(chan struct{}, 2)
		for _, row := range reads {
			t.Run(row.name, func(t *testing.T) {
				t.Parallel()
				sem <- struct{}{}
				defer func() { <-sem }()
				runCLIRow(t, osc, env, row)
			})
		}
	})
	for _, row := range changes {
		if !t.Run(row.name, func(t *testing.T) { runCLIRow(t, osc, env, row) }) {
			t.Fatalf("row %q failed: the rows after it depend on it", row.name)
		}
	}
	t.Logf("%d CLI commands in %v", len(reads)+len(changes), time.Since(start).Round(time.Millisecond))
}

func runCLIRow(t *testing.T, osc string, env []string, row cliRow) {
	cloud := row.cloud
	if cloud == "" {
		cloud = "cloudsim"
	}
	args := append([]string{"--os-cloud", cloud}, row.args()...)
	if row.fails == "" && !isChange(row.args()) && !slices.Contains(row.args(), "status") {
		args = append(args, "-f", "json")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, osc, args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if row.fails != "" {
		if err == nil || !strings.Contains(stderr.String(), row.fails) {
			t.Fatalf("openstack %s: err=%v, stderr %q; want a failure saying %q", strings.Join(args, " "), err, stderr.String(), row.fails)
		}
		return
	}
	if err != nil {
		t.Fatalf("openstack %s: %v\nstderr: %s", strings.Join(args, " "), err, stderr.String())
	}
	var out any
	if s := bytes.TrimSpace(stdout.Bytes()); len(s) > 0 {
		if err := json.Unmarshal(s, &out); err != nil {
			t.Fatalf("openstack %s: output is not JSON: %v\n%s", strings.Join(args, " "), err, s)
		}
	}
	row.check(t, out)
}

// isChange: commands that print nothing (set, unset, delete) take no -f; neither does `loadbalancer status show`, which always
// prints JSON.
func isChange(args []string) bool {
	for _, a := range args {
		switch a {
		case "set", "unset", "delete":
			return true
		}
	}
	return false
}

func field(out any, key string) any {
	m, _ := out.(map[string]any)
	return m[key]
}

func rowOf(out any, i int) map[string]any {
	rows, _ := out.([]any)
	if i >= len(rows) {
		return nil
	}
	m, _ := rows[i].(map[string]any)
	return m
}

func column(out any, key string) []string {
	rows, _ := out.([]any)
	var col []string
	for _, r := range rows {
		m, _ := r.(map[string]any)
		col = append(col, fmt.Sprint(m[key]))
	}
	return col
}

func wantEq(t *testing.T, got, want any) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
