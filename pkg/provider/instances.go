package provider

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/stackward/stackward/pkg/nodeaddress"
	"github.com/stackward/stackward/pkg/openstack"
)

// instances answers the cloud-node and cloud-node-lifecycle controllers.
//
// Cloud calls: every lookup goes through the bulk server cache, one
// servers/detail listing per TTL shared by all nodes, so a burst of N nodes
// joining, the address sync of N nodes and the lifecycle checks of NotReady
// nodes cost one listing per TTL, not N GETs. A server the listing does not
// have (created since) is asked of Nova directly, so one node costs at most
// two calls (a listing refresh and a direct lookup), and only Nova's own
// answer can say "not found". The price is that data may be up to one TTL
// old, which the periodic address sync corrects.
//
// Addresses on trunk subports come the same way: one reading of the
// project's trunks per TTL (openstack.TrunkCache) serves every node, one
// request when the project has no trunk.
type instances struct {
	// servers is Nova behind the bulk listing (openstack.ServerCache).
	servers openstack.Compute
	// trunks is Neutron's trunks behind one listing (openstack.TrunkCache);
	// nil without a Neutron client: no subport addresses.
	trunks trunkSource
	// region is [Global] region, reported as the node's region.
	region string
	// providerIDRegion is written into providerIDs ("" for openstack:///).
	providerIDRegion string
	// project names the project in messages.
	project   string
	addresses nodeaddress.Options
	// dnsSuffixes are the approver's --dns-suffix values: a node named
	// <server name>.<suffix> is that server's (nodeaddress.IsNodeNameOf).
	dnsSuffixes []string
	recorder    atomic.Pointer[record.EventRecorder]
}

var _ cloudprovider.InstancesV2 = (*instances)(nil)

func (i *instances) setRecorder(r record.EventRecorder) { i.recorder.Store(&r) }

// InstanceExists is false only when the cloud says definitively that the
// server does not exist (a 404, no server with the node's name, or a server
// in DELETED state). Any other failure is an error: the lifecycle controller
// then leaves the Node alone.
func (i *instances) InstanceExists(ctx context.Context, node *corev1.Node) (bool, error) {
	server, err := i.lookup(ctx, node)
	if openstack.IsNotFound(err) && node.Spec.ProviderID == "" {
		// A Node that was never matched to a server (the CCM sets the
		// providerID when it does) proves nothing by its absence: its name
		// may simply not be a server name, or its kubelet may still be
		// joining. Deleting it would hide the problem from the operator;
		// the InstanceNotFound Event and `stackward doctor` show it.
		return false, fmt.Errorf("node %q was never matched to a server, so it is not deleted: %w", node.Name, errUnmatched{err})
	}
	if openstack.IsNotFound(err) {
		klog.FromContext(ctx).V(2).Info("Instance does not exist", "node", klog.KObj(node), "reason", err.Error())
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return server.Status != openstack.StatusDeleted, nil
}

// InstanceShutdown is true for a SHUTOFF server. A server that does not
// exist is not "shut down" (InstanceExists reports it).
func (i *instances) InstanceShutdown(ctx context.Context, node *corev1.Node) (bool, error) {
	server, err := i.lookup(ctx, node)
	if openstack.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return server.Status == openstack.StatusShutoff, nil
}

// InstanceMetadata is what the cloud-node controller writes on the Node.
func (i *instances) InstanceMetadata(ctx context.Context, node *corev1.Node) (*cloudprovider.InstanceMetadata, error) {
	server, err := i.lookup(ctx, node)
	if err != nil {
		i.recordLookupFailure(node, err)
		return nil, err
	}
	if server.Status == openstack.StatusDeleted {
		err := fmt.Errorf("node %q: server %s is deleted: %w", node.Name, server.ID, openstack.ErrNotFound)
		i.recordLookupFailure(node, err)
		return nil, err
	}
	view := nodeaddress.CloudView{Server: server}
	if i.trunks != nil {
		t, err := i.trunks.OfServer(ctx, server.ID)
		if err != nil {
			// Never publish without the subports: the Node would lose
			// their addresses until the next sync.
			return nil, fmt.Errorf("node %q: %w", node.Name, err)
		}
		view.Ports, view.Trunks, view.Subports, view.Networks = t.Ports, t.Trunks, t.Subports, t.Networks
	}
	addresses, err := nodeaddress.ForView(view, i.addresses)
	if err != nil {
		return nil, fmt.Errorf("node %q: %w", node.Name, err)
	}
	return &cloudprovider.InstanceMetadata{
		ProviderID:    openstack.ProviderID(i.providerIDRegion, server.ID),
		InstanceType:  sanitizeLabelValue(server.FlavorName),
		NodeAddresses: addresses,
		Zone:          sanitizeLabelValue(server.AvailabilityZone),
		Region:        sanitizeLabelValue(i.region),
	}, nil
}

// trunkSource answers which trunks are on a server's ports.
type trunkSource interface {
	OfServer(ctx context.Context, serverID string) (openstack.ServerTrunks, error)
}

// lookup finds the node's server: by providerID, or by exact name when the
// Node has none.
func (i *instances) lookup(ctx context.Context, node *corev1.Node) (*openstack.Server, error) {
	providerID := node.Spec.ProviderID
	if providerID != "" {
		// A server of another region would be a 404 here, and "not found"
		// deletes Nodes: refuse to answer instead.
		region, _, err := openstack.ParseProviderID(providerID)
		if err != nil {
			return nil, fmt.Errorf("node %q: %w", node.Name, err)
		}
		if region != "" && region != i.region {
			return nil, fmt.Errorf("node %q: providerID %q is in region %q, this cloud provider serves region %q", node.Name, providerID, region, i.region)
		}
	}
	server, err := openstack.ServerForNode(ctx, i.servers, providerID, node.Name)
	if err != nil {
		return nil, i.explain(node, err)
	}
	if !nodeaddress.IsNodeNameOf(node.Name, server.Name, i.dnsSuffixes) {
		// Neither "exists" nor "not found": the Node stays uninitialized
		// and is never deleted on the strength of another server's state.
		return nil, fmt.Errorf("node %q has providerID %q, but that server is named %q (the node name must be the server name, or the server name with a --dns-suffix): %w",
			node.Name, providerID, server.Name, ErrNameMismatch)
	}
	return server, nil
}

// explain says why a node has no server, in words a user reading the
// Node's events can act on; the cause stays reachable with errors.Is.
func (i *instances) explain(node *corev1.Node, err error) error {
	if node.Spec.ProviderID != "" {
		return fmt.Errorf("node %q: server for providerID %q: %w", node.Name, node.Spec.ProviderID, err)
	}
	const why = "looked up by exact name because the Node has no providerID"
	switch {
	case openstack.IsNotFound(err):
		return fmt.Errorf("no server named %q in project %s (%s): %w", node.Name, i.project, why, err)
	case errors.Is(err, openstack.ErrAmbiguous):
		return fmt.Errorf("several servers named %q in project %s (%s; set the kubelet's --provider-id to choose one): %w", node.Name, i.project, why, err)
	}
	return fmt.Errorf("look up server named %q (%s): %w", node.Name, why, err)
}

// recordLookupFailure puts a definitive failure (no server, several
// servers) on the Node as a Warning Event. Transient cloud errors are only
// logged: they fix themselves and would flood the events.
func (i *instances) recordLookupFailure(node *corev1.Node, err error) {
	reason := ""
	switch {
	case openstack.IsNotFound(err):
		reason = "InstanceNotFound"
	case errors.Is(err, openstack.ErrAmbiguous):
		reason = "InstanceAmbiguous"
	case errors.Is(err, ErrNameMismatch):
		reason = "InstanceNameMismatch"
	default:
		return
	}
	if r := i.recorder.Load(); r != nil {
		(*r).Event(node, corev1.EventTypeWarning, reason, err.Error())
	}
}

// ErrNameMismatch means a Node's providerID names a server whose name is
// not the node's: the CCM does not initialize it (the approver denies its
// certificates for the same reason).
var ErrNameMismatch = errors.New("node name does not match the server name")

// errUnmatched hides the "not found" of a lookup by name from errors.Is, so
// that no caller takes an unmatched Node's error for a missing instance.
type errUnmatched struct{ err error }

func (e errUnmatched) Error() string { return e.err.Error() }
