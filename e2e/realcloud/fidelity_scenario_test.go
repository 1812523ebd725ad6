//go:build e2e

package realcloud

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stackward/stackward/e2e/framework"
	"github.com/stackward/stackward/pkg/config"
	"github.com/stackward/stackward/pkg/openstack"
)

// step is one call (or short sequence) of the scenario and what came back.
type step struct {
	name string
	o    obs
}

// fidelityRun is the scenario on one cloud: pkg/openstack's adapters as
// the CCM's user sees the cloud, with every exchange recorded.
type fidelityRun struct {
	t       *testing.T
	ctx     context.Context
	cloud   framework.TestCloud
	clients *openstack.Clients
	octavia *openstack.Octavia
	rec     *framework.Recorder
	n       *namer
	steps   []step

	project, labNet, labSubnet, publicNet string
	serverA, serverB, portA, ipA          string
}

// Fixed IDs nothing has: what each service says about a missing resource.
const (
	missingServer = "7f0c6c1e-3a0b-4c8e-9d53-52a4e1f0aa01"
	missingPort   = "7f0c6c1e-3a0b-4c8e-9d53-52a4e1f0aa02"
	missingLB     = "7f0c6c1e-3a0b-4c8e-9d53-52a4e1f0aa03"
	otherProject  = "7f0c6c1e3a0b4c8e9d5352a4e1f0aa04"
)

// record runs one step: fn fills its observations, and the exchanges it
// made are kept as its calls unless fn polls (a variable number of them).
func (r *fidelityRun) record(name string, calls bool, fn func(o obs)) {
	mark := r.rec.Mark()
	o := obs{}
	fn(o)
	if calls {
		o.calls(r.n, "calls", r.rec.Since(mark))
	}
	r.steps = append(r.steps, step{name: name, o: o})
}

// last is the most recent exchange.
func (r *fidelityRun) last() framework.Exchange {
	exs := r.rec.Since(0)
	if len(exs) == 0 {
		r.t.Fatal("no exchange recorded")
	}
	return exs[len(exs)-1]
}

// fidelityScenario drives the same scenario through pkg/openstack on the
// cloud of b and returns what every step observed.
func fidelityScenario(t *testing.T, b framework.Backend) []step {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	cfg, _, err := config.Load(b.Cloud.CloudConf(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	clients, err := openstack.NewClients(ctx, cfg, openstack.ClientOptions{Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	octavia, err := openstack.NewOctavia(clients)
	if err != nil {
		t.Fatal(err)
	}
	r := &fidelityRun{t: t, ctx: ctx, cloud: b.Cloud, clients: clients, octavia: octavia, rec: framework.Record(clients.Provider), n: newNamer()}
	r.project = clients.ProjectID
	r.n.add(r.project, "project-lab")
	for id, name := range map[string]string{missingServer: "missing-server", missingPort: "missing-port", missingLB: "missing-lb", otherProject: "other-project"} {
		r.n.add(id, name)
	}

	a := b.Cloud.CreateServer(t, "fid-a", b.FirstNode, "m1.small", "az-1")
	bs := b.Cloud.CreateServer(t, "fid-b", b.FirstNode+1, "m1.medium", "az-2")
	r.serverA, r.serverB, r.ipA = a.ID, bs.ID, framework.NodeIP(b.FirstNode)
	r.n.add(a.ID, "server-a")
	r.n.add(bs.ID, "server-b")
	r.n.add(r.ipA, "ip-a")
	r.n.add(framework.NodeIP(b.FirstNode+1), "ip-b")
	r.n.add(b.Cloud.AttachFloatingIP(t, a.ID), "fip-a")

	// Ports go ACTIVE when the (lab's stand-in for) ovn-controller binds
	// them, which Nova's fake driver does not wait for: a precondition
	// here, not an observation.
	err = wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := clients.Neutron.PortsOfServers(ctx, []string{a.ID, bs.ID}, r.project)
		if err != nil {
			return false, err
		}
		active := 0
		for _, p := range list {
			if p.Status == openstack.PortStatusActive {
				active++
			}
		}
		return active == 2, nil
	})
	if err != nil {
		t.Fatalf("the servers' ports did not go ACTIVE: %v", err)
	}

	r.novaSteps()
	r.neutronSteps()
	r.octaviaSteps()
	return r.steps
}

func (r *fidelityRun) novaSteps() {
	ctx, n := r.ctx, r.n
	r.record("nova: get a server", true, func(o obs) {
		srv, err := r.clients.Compute.GetServer(ctx, r.serverA)
		o.err("error", err)
		if srv != nil {
			o["status"], o["task_state"], o["flavor"], o["az"] = srv.Status, srv.TaskState, srv.FlavorName, srv.AvailabilityZone
			o["tenant"], o["launched_at_read"] = n.norm(srv.TenantID), strconv.FormatBool(!srv.LaunchedAt.IsZero())
			for network, addrs := range srv.Addresses {
				for i, a := range addrs {
					o[fmt.Sprintf("addresses.%s[%d]", network, i)] = fmt.Sprintf("%s v%d %s mac:%t", n.norm(a.Addr), a.Version, a.Type, a.MAC != "")
				}
			}
		}
		ex := r.last()
		for _, h := range []string{"OpenStack-API-Version", "X-OpenStack-Nova-API-Version"} {
			o["header."+h] = ex.Header.Get(h)
		}
		o.fields(n, "body", decode(ex.Body), "server.status", "server.OS-EXT-STS:task_state", "server.OS-EXT-STS:vm_state",
			"server.flavor.original_name", "server.flavor.id", "server.tags", "server.OS-EXT-AZ:availability_zone",
			"server.accessIPv4", "server.accessIPv6", "server.metadata", "server.tenant_id", "server.OS-SRV-USG:launched_at",
			"server.addresses")
	})
	r.record("nova: a server that does not exist", true, func(o obs) {
		_, err := r.clients.Compute.GetServer(ctx, missingServer)
		o.err("error", err)
		ex := r.last()
		o.errorBody("answer", ex)
		o["header.request-id"] = strconv.FormatBool(ex.Header.Get("X-Openstack-Request-Id") != "" || ex.Header.Get("X-Compute-Request-Id") != "")
	})
	r.record("nova: servers whose name matches a regular expression", true, func(o obs) {
		list, err := r.clients.Compute.ListServers(ctx, openstack.ListServersOpts{Name: "^fid-"})
		o.err("error", err)
		var names []string
		for _, s := range list {
			names = append(names, s.Name+" "+n.norm(s.ID))
		}
		slices.Sort(names)
		o["servers"] = strings.Join(names, ", ")
	})
	r.record("nova: servers/detail one server per page", true, func(o obs) {
		compute, err := r.clients.ServiceClient("compute")
		if err != nil {
			r.t.Fatal(err)
		}
		compute.Microversion = openstack.ComputeMicroversion
		next := compute.ServiceURL("servers", "detail") + "?limit=1&name=" + url.QueryEscape("^fid-")
		for page := 0; next != "" && page < 5; page++ {
			var body struct {
				Servers []struct {
					ID string `json:"id"`
				} `json:"servers"`
				Links []gophercloud.Link `json:"servers_links"`
			}
			_, err := compute.Get(ctx, next, &body, &gophercloud.RequestOpts{OkCodes: []int{http.StatusOK}}) //nolint:bodyclose // gophercloud closes it, decoding it into body
			o.err(fmt.Sprintf("page[%d].error", page), err)
			o[fmt.Sprintf("page[%d].servers", page)] = strconv.Itoa(len(body.Servers))
			next = ""
			for _, l := range body.Links {
				if l.Rel == "next" {
					next = l.Href
					o[fmt.Sprintf("page[%d].next", page)] = apiPath(n, l.Href)
					o[fmt.Sprintf("page[%d].next_on_the_endpoint", page)] = strconv.FormatBool(strings.HasPrefix(l.Href, compute.Endpoint))
				}
			}
			if len(body.Servers) == 0 {
				break
			}
		}
	})
}

func (r *fidelityRun) neutronSteps() {
	ctx, n, neutron := r.ctx, r.n, r.clients.Neutron
	r.record("neutron: the ports of a server (device_id and project_id)", true, func(o obs) {
		list, err := neutron.ServerPorts(ctx, r.serverA, r.project)
		o.err("error", err)
		o["count"] = strconv.Itoa(len(list))
		if len(list) != 1 {
			r.t.Fatalf("server %s has %d ports, want 1", r.serverA, len(list))
		}
		p := list[0]
		r.portA, r.labNet = p.ID, p.NetworkID
		n.add(p.ID, "port-a")
		n.add(p.NetworkID, "net-lab")
		if len(p.FixedIPs) > 0 {
			r.labSubnet = p.FixedIPs[0].SubnetID
			n.add(r.labSubnet, "subnet-lab")
		}
		o["status"], o["device_id"], o["project"], o["network"] = p.Status, n.norm(p.DeviceID), n.norm(p.ProjectID), n.norm(p.NetworkID)
		for i, f := range p.FixedIPs {
			o[fmt.Sprintf("fixed_ips[%d]", i)] = n.norm(f.SubnetID) + " " + n.norm(f.IPAddress)
		}
		o["mac"], o["port_security"], o["security_groups"] = n.norm(p.MACAddress), strconv.FormatBool(p.PortSecurityEnabled), strconv.Itoa(len(p.SecurityGroups))
		o["binding_host"] = fmt.Sprintf("known:%t %q", p.BindingHostKnown, p.BindingHostID)
		o["revision_number_set"] = strconv.FormatBool(p.RevisionNumber > 0)
		o.fields(n, "body", decode(r.last().Body), "ports_links", "ports.0")
	})
	r.record("neutron: the ports of two servers in one request", true, func(o obs) {
		list, err := neutron.PortsOfServers(ctx, []string{r.serverA, r.serverB}, r.project)
		o.err("error", err)
		var devices []string
		for _, p := range list {
			devices = append(devices, n.norm(p.DeviceID)+" "+p.Status)
		}
		slices.Sort(devices)
		o["devices"] = strings.Join(devices, ", ")
	})
	r.record("neutron: the ports of a server in another project", true, func(o obs) {
		list, err := neutron.ServerPorts(ctx, r.serverA, otherProject)
		o.err("error", err)
		o["count"] = strconv.Itoa(len(list))
	})
	r.record("neutron: a server's ports one per page", true, func(o obs) {
		nc, err := r.clients.NeutronClient()
		if err != nil {
			r.t.Fatal(err)
		}
		pages, err := ports.List(nc, ports.ListOpts{DeviceID: r.serverA, Limit: 1}).AllPages(ctx)
		o.err("error", err)
		if err == nil {
			list, err := ports.ExtractPorts(pages)
			o.err("extract", err)
			o["count"] = strconv.Itoa(len(list))
		}
	})
	r.record("neutron: the floating IPs of a port", true, func(o obs) {
		list, err := neutron.FloatingIPsOfPorts(ctx, []string{r.portA})
		o.err("error", err)
		o["count"] = strconv.Itoa(len(list))
		if len(list) == 1 {
			f := list[0]
			r.publicNet = f.NetworkID
			n.add(f.ID, "fipid-a")
			n.add(f.NetworkID, "net-public")
			o["address"], o["port"], o["fixed"], o["project"], o["network"] = n.norm(f.Address), n.norm(f.PortID), n.norm(f.FixedIPAddress), n.norm(f.ProjectID), n.norm(f.NetworkID)
		}
		o.fields(n, "body", decode(r.last().Body), "floatingips.0.status", "floatingips.0.port_id", "floatingips.0.fixed_ip_address",
			"floatingips.0.floating_ip_address", "floatingips.0.tenant_id", "floatingips.0.project_id", "floatingips.0.description")
	})
	r.record("neutron: networks by ID", true, func(o obs) {
		list, err := neutron.Networks(ctx, []string{r.labNet, r.publicNet})
		o.err("error", err)
		for _, nw := range list {
			o["network."+n.norm(nw.ID)] = fmt.Sprintf("name=%s shared=%t external=%t project=%s", nw.Name, nw.Shared, nw.External, n.norm(nw.ProjectID))
		}
	})
	r.record("neutron: a port that does not exist", true, func(o obs) {
		_, err := neutron.Port(ctx, missingPort)
		o.err("error", err)
		o.errorBody("answer", r.last())
	})
	r.record("neutron: allowed address pairs written with a stale, then the current revision", true, func(o obs) {
		p, err := neutron.Port(ctx, r.portA)
		if err != nil {
			r.t.Fatal(err)
		}
		pairs := []openstack.AddressPair{{IPAddress: "10.96.0.0/12"}}
		o.err("stale", neutron.SetAllowedAddressPairs(ctx, r.portA, pairs, p.RevisionNumber-1))
		o.err("current", neutron.SetAllowedAddressPairs(ctx, r.portA, pairs, p.RevisionNumber))
		after, err := neutron.Port(ctx, r.portA)
		o.err("read back", err)
		if after != nil {
			o["revision_increased"] = strconv.FormatBool(after.RevisionNumber > p.RevisionNumber)
			for i, ap := range after.AllowedAddressPairs {
				o[fmt.Sprintf("pairs[%d]", i)] = ap.IPAddress + " " + n.norm(ap.MACAddress)
			}
			o.err("clear", neutron.SetAllowedAddressPairs(ctx, r.portA, nil, after.RevisionNumber))
		}
	})
	r.record("neutron: a security group, a rule made twice and deleted twice", true, func(o obs) {
		sg, err := neutron.CreateGroup(ctx, "fid-sg", "fidelity")
		if err != nil {
			r.t.Fatalf("create security group: %v", err)
		}
		n.add(sg.ID, "sg")
		r.t.Cleanup(func() { _ = neutron.DeleteGroup(context.Background(), sg.ID) })
		var defaults []string
		for _, rule := range sg.Rules {
			defaults = append(defaults, fmt.Sprintf("%s %s %q %d-%d %q", rule.Direction, rule.Ethertype, rule.Protocol, rule.PortMin, rule.PortMax, rule.RemoteIPPrefix))
		}
		slices.Sort(defaults)
		o["rules_of_a_new_group"] = strings.Join(defaults, ", ")
		rule := openstack.Rule{Direction: "ingress", Ethertype: "IPv4", Protocol: "tcp", PortMin: 30080, PortMax: 30080, RemoteIPPrefix: "0.0.0.0/0"}
		o.err("create", neutron.CreateRule(ctx, sg.ID, rule))
		o.err("create again", neutron.CreateRule(ctx, sg.ID, rule))
		found, err := neutron.FindGroups(ctx, "fid-sg")
		o.err("find", err)
		o["found"] = strconv.Itoa(len(found))
		for _, g := range found {
			for _, got := range g.Rules {
				if got.Key() == rule.Key() {
					o.err("delete rule", neutron.DeleteRule(ctx, got.ID))
					o.err("delete rule again", neutron.DeleteRule(ctx, got.ID))
				}
			}
		}
		o.err("delete group", neutron.DeleteGroup(ctx, sg.ID))
		o.err("delete group again", neutron.DeleteGroup(ctx, sg.ID))
	})
}
