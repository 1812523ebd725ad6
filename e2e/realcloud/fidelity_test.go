//go:build e2e

package realcloud

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stackward/stackward/e2e/framework"
)

// TestCloudsimAnswersLikeTheRealServices drives one scenario through
// pkg/openstack (the adapters the CCM and the approver use) against
// stackward-cloudsim and against the real services, and compares what our
// code consumes: the domain values the adapters return, how they classify
// errors, status codes and error bodies, the fields read from the JSON,
// pages, Nova's microversion headers, filters, and Octavia's
// provisioning-status transitions. IDs, addresses, MACs and timestamps are
// normalized. Every difference must be one of knownDifferences (the
// docs/development/simulator-differences.md); a new one fails, and so does a
// listed one that no longer occurs, so the list stays true.
func TestCloudsimAnswersLikeTheRealServices(t *testing.T) {
	// A PENDING_* phase the poll can see, as on the real cloud.
	sim := framework.StartSimCloud(t, framework.SimCloudOptions{OctaviaDelay: 2 * time.Second})
	got := map[string][]step{}
	for _, b := range []framework.Backend{{Cloud: sim.TestCloud(), FirstNode: 90}, {Cloud: framework.SharedRealCloud(t), FirstNode: 190}} {
		if !t.Run(b.Cloud.Name(), func(t *testing.T) { got[b.Cloud.Name()] = fidelityScenario(t, b) }) {
			t.FailNow()
		}
	}
	diffs := compareSteps(got["cloudsim"], got["openstack"])
	used := map[string]bool{}
	for _, d := range diffs {
		k := matchKnown(d)
		if k == nil {
			t.Errorf("cloudsim differs from the real services (fix cloudsim, or list it in knownDifferences and docs/development/simulator-differences.md):\n  step %q, %s\n    cloudsim:  %s\n    openstack: %s", d.step, d.key, d.sim, d.real)
			continue
		}
		used[k.name] = true
		t.Logf("known difference %q: step %q, %s: cloudsim %s, openstack %s", k.name, d.step, d.key, d.sim, d.real)
	}
	for _, k := range knownDifferences {
		if !used[k.name] {
			t.Errorf("known difference %q no longer occurs: remove it from knownDifferences and docs/development/simulator-differences.md", k.name)
		}
	}
}

// difference is one observation that is not the same on both clouds.
type difference struct {
	step, key, sim, real string
}

const absent = "<no such observation>"

func compareSteps(sim, real []step) []difference {
	var names []string
	simBy, realBy := map[string]obs{}, map[string]obs{}
	for _, s := range sim {
		simBy[s.name] = s.o
		names = append(names, s.name)
	}
	for _, s := range real {
		realBy[s.name] = s.o
		if _, ok := simBy[s.name]; !ok {
			names = append(names, s.name)
		}
	}
	var out []difference
	for _, name := range names {
		so, ro := simBy[name], realBy[name]
		var keys []string
		for k := range so {
			keys = append(keys, k)
		}
		for k := range ro {
			if _, ok := so[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			sv, ok := so[k]
			if !ok {
				sv = absent
			}
			rv, ok := ro[k]
			if !ok {
				rv = absent
			}
			if sv != rv {
				out = append(out, difference{step: name, key: k, sim: sv, real: rv})
			}
		}
	}
	return out
}

// knownDifference is a difference we keep on purpose. Step and key name
// the observation exactly (key may end in "*" to cover a prefix); sim and
// real are the two values, exactly, so that a change on either side is
// noticed.
type knownDifference struct {
	name, step, key, sim, real string
}

func matchKnown(d difference) *knownDifference {
	for i, k := range knownDifferences {
		key := k.key == d.key || (strings.HasSuffix(k.key, "*") && strings.HasPrefix(d.key, strings.TrimSuffix(k.key, "*")))
		if k.step == d.step && key && k.sim == d.sim && k.real == d.real {
			return &knownDifferences[i]
		}
	}
	return nil
}

// knownDifferences are the differences
// docs/development/simulator-differences.md lists, each with its reason there.
var knownDifferences = []knownDifference{
	// The lab seeds, not the services: the real lab's external network
	// belongs to the admin project, cloudsim's lab seed has no admin project.
	{name: "external network owner", step: "neutron: networks by ID", key: "network.net-public",
		sim:  "name=public shared=false external=false project=project-lab",
		real: "name=public shared=false external=false project=<uuid>"},
	// The lab's amphora provider runs Octavia's noop drivers: no amphora
	// sends heartbeats, so its load balancers stay OFFLINE.
	amphoraOffline("octavia amphora: the create settles"),
	amphoraOffline("octavia amphora: the listener settles"),
	amphoraOffline("octavia amphora: the pool settles"),
	amphoraOffline("octavia amphora: the member settles"),
	amphoraOffline("octavia amphora: the monitor settles"),
	amphoraOffline("octavia amphora: the one-call listener settles"),
	// ...and its noop network driver deletes no VIP port.
	{name: "amphora-noop keeps its VIP port", step: "octavia amphora: the VIP port after the delete", key: "error",
		sim: "ErrNotFound", real: "none"},
}

func amphoraOffline(step string) knownDifference {
	return knownDifference{name: "amphora-noop stays OFFLINE", step: step, key: "body.loadbalancer.operating_status", sim: "ONLINE", real: "OFFLINE"}
}
