package cloudsim

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	gotoken "go/token"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
)

// The simulator's bodies are checked against gophercloud's own test
// fixtures, read from the module the build uses: every field a fixture has
// must be present with the same JSON type. A null on either side is accepted,
// since OpenStack services return null for unset optional fields.

// gophercloudDir is the directory of the gophercloud module in the module cache.
func gophercloudDir(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/gophercloud/gophercloud/v2").Output()
	if err != nil {
		t.Fatalf("locate gophercloud: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// fixtureObject returns the object under key from a string literal in a
// fixture file: the constant named name, or the first literal holding key.
func fixtureObject(t *testing.T, file, name, key string) map[string]any {
	t.Helper()
	f, err := parser.ParseFile(gotoken.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatalf("parse %s: %v", file, err)
	}
	var found map[string]any
	ast.Inspect(f, func(n ast.Node) bool {
		if found != nil {
			return false
		}
		if vs, ok := n.(*ast.ValueSpec); ok && name != "" {
			if vs.Names[0].Name != name {
				return false
			}
		}
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != gotoken.STRING {
			return true
		}
		s, err := strconv.Unquote(lit.Value)
		if err != nil {
			return true
		}
		var doc map[string]any
		if json.Unmarshal([]byte(s), &doc) != nil {
			return true
		}
		if obj, ok := doc[key].(map[string]any); ok {
			found = obj
		}
		return true
	})
	if found == nil {
		t.Fatalf("no %q object in %s (%s)", key, file, name)
	}
	return found
}

// dynamicKeys hold maps keyed by data (network names, metadata keys): only
// the shape of their values is compared.
var dynamicKeys = map[string]bool{"addresses": true, "metadata": true, "meta": true, "extra_specs": true,
	"binding:vif_details": true, "binding:profile": true, "insert_headers": true}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "bool"
	case float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	default:
		return "object"
	}
}

func compareShape(path string, fixture, ours any, problems *[]string) {
	ft, ot := jsonType(fixture), jsonType(ours)
	if ft == "null" || ot == "null" {
		return
	}
	if ft != ot {
		*problems = append(*problems, fmt.Sprintf("%s: fixture has %s, simulator %s", path, ft, ot))
		return
	}
	switch f := fixture.(type) {
	case []any:
		o := ours.([]any)
		if len(f) > 0 && len(o) > 0 {
			compareShape(path+"[0]", f[0], o[0], problems)
		}
	case map[string]any:
		o := ours.(map[string]any)
		keys := make([]string, 0, len(f))
		for k := range f {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ov, ok := o[k]
			if !ok {
				*problems = append(*problems, fmt.Sprintf("%s.%s: missing", path, k))
				continue
			}
			if dynamicKeys[k] {
				compareDynamic(path+"."+k, f[k], ov, problems)
				continue
			}
			compareShape(path+"."+k, f[k], ov, problems)
		}
	}
}

func compareDynamic(path string, fixture, ours any, problems *[]string) {
	fm, _ := fixture.(map[string]any)
	om, _ := ours.(map[string]any)
	if fixture != nil && ours != nil && (fm == nil || om == nil) {
		*problems = append(*problems, fmt.Sprintf("%s: fixture has %s, simulator %s", path, jsonType(fixture), jsonType(ours)))
		return
	}
	for _, fv := range fm {
		for _, ov := range om {
			compareShape(path+".*", fv, ov, problems)
			return
		}
	}
}

var adminOnlyPortFields = []string{"binding:host_id", "binding:vif_type", "binding:vif_details", "binding:profile"}

func TestResponsesHaveGophercloudFixtureShapes(t *testing.T) {
	env := newLBEnv(t, Options{OctaviaDelay: 50 * time.Millisecond})
	sim := env.sim
	ctx := ctxT(t)
	created, err := loadbalancers.Create(ctx, env.lb, fullLBOpts(env.subnetID, "10.0.0.11")).Extract()
	if err != nil {
		t.Fatal(err)
	}
	waitLB(t, env.lb, created.ID, "ACTIVE")
	node, _ := sim.ServerByName("node-1")
	base := strings.TrimSuffix(env.lb.Endpoint, "/load-balancer/")
	pool := created.Pools[0]
	var fipID, routerID, sgID string
	sim.mu.RLock()
	fipID = sim.state.fips.all()[0].ID
	routerID = sim.state.routers.all()[0].ID
	sgID = sim.state.secGroups.all()[0].ID
	sim.mu.RUnlock()

	gc := gophercloudDir(t)
	osDir := filepath.Join(gc, "openstack")
	tests := []struct {
		kind, file, constName, key, path string
	}{
		{"server", "compute/v2/servers/testing/fixtures_test.go", "SingleServerBody", "server", "/compute/v2.1/servers/" + node.ID},
		{"token", "identity/v3/tokens/testing/fixtures.go", "TokenOutput", "token", "/v3/auth/tokens"},
		{"network", "networking/v2/networks/testing/fixtures.go", "GetResponse", "network", "/networking/v2.0/networks/" + node.Addresses[0].Network},
		{"subnet", "networking/v2/subnets/testing/fixtures_test.go", "SubnetGetResult", "subnet", "/networking/v2.0/subnets/" + env.subnetID},
		{"port", "networking/v2/ports/testing/fixtures.go", "GetResponse", "port", "/networking/v2.0/ports/" + node.PortIDs[0]},
		{"router", "networking/v2/extensions/layer3/routers/testing/requests_test.go", "", "router", "/networking/v2.0/routers/" + routerID},
		{"floating IP", "networking/v2/extensions/layer3/floatingips/testing/requests_test.go", "", "floatingip", "/networking/v2.0/floatingips/" + fipID},
		{"security group", "networking/v2/extensions/security/groups/testing/fixtures_test.go", "SecurityGroupGetResponse", "security_group", "/networking/v2.0/security-groups/" + sgID},
		{"load balancer", "loadbalancer/v2/loadbalancers/testing/fixtures_test.go", "SingleLoadbalancerBody", "loadbalancer", "/load-balancer/v2/lbaas/loadbalancers/" + created.ID},
		{"listener", "loadbalancer/v2/listeners/testing/fixtures_test.go", "SingleListenerBody", "listener", "/load-balancer/v2/lbaas/listeners/" + created.Listeners[0].ID},
		{"pool", "loadbalancer/v2/pools/testing/fixtures_test.go", "SinglePoolBody", "pool", "/load-balancer/v2/lbaas/pools/" + pool.ID},
		{"member", "loadbalancer/v2/pools/testing/fixtures_test.go", "SingleMemberBody", "member", "/load-balancer/v2/lbaas/pools/" + pool.ID + "/members/" + pool.Members[0].ID},
		{"health monitor", "loadbalancer/v2/monitors/testing/fixtures_test.go", "SingleHealthmonitorBody", "healthmonitor", "/load-balancer/v2/lbaas/healthmonitors/" + pool.MonitorID},
	}
	// The network is addressed by ID.
	sim.mu.RLock()
	tests[2].path = "/networking/v2.0/networks/" + sim.state.networkRef("private").ID
	sim.mu.RUnlock()
	tok := env.lb.ProviderClient.Token()
	for _, tt := range tests {
		t.Run("a "+tt.kind+" has every field of gophercloud's fixture", func(t *testing.T) {
			fixture := fixtureObject(t, filepath.Join(osDir, tt.file), tt.constName, tt.key)
			req, _ := http.NewRequestWithContext(ctx, "GET", base+tt.path, nil)
			req.Header.Set("X-Auth-Token", tok)
			req.Header.Set("X-Subject-Token", tok)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var doc map[string]any
			if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || resp.StatusCode != 200 {
				t.Fatalf("GET %s: %d, %v", tt.path, resp.StatusCode, err)
			}
			var problems []string
			compareShape(tt.key, fixture, doc[tt.key], &problems)
			// The fixture is an admin's view; Neutron shows a port's
			// binding fields but vnic_type to admins only.
			problems = slices.DeleteFunc(problems, func(p string) bool {
				return slices.Contains(adminOnlyPortFields, strings.TrimSuffix(strings.TrimPrefix(p, "port."), ": missing"))
			})
			if len(problems) > 0 {
				t.Errorf("%d differences:\n%s", len(problems), strings.Join(problems, "\n"))
			}
		})
	}
}
