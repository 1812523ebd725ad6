package doctor

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/stackward/stackward/pkg/openstack"
)

// Approver denial reasons (pkg/approver's Reason* constants; repeated here so
// that the operator CLI does not link the controller).
const (
	reasonIPNotOfInstance      = "IPNotOfInstance"
	reasonDNSNameNotOfInstance = "DNSNameNotOfInstance"
	reasonForbiddenDNSName     = "ForbiddenDNSName"
	reasonInstanceNotFound     = "InstanceNotFound"
	reasonInstanceDeleted      = "InstanceDeleted"
	reasonInstanceNameMismatch = "InstanceNameMismatch"
	reasonInstanceAmbiguous    = "InstanceAmbiguous"
	reasonInvalidProviderID    = "InvalidProviderID"
)

func age(now, since time.Time) string {
	if since.IsZero() {
		return "unknown"
	}
	return duration.HumanDuration(now.Sub(since))
}

const restartKubelet = "restart the kubelet: it asks again by itself"

// hint says what to do about f, using what the cloud said about the node.
func hint(p *NodeProblems, f *Finding, now time.Time) string {
	switch f.Kind {
	case NodeUninitialized:
		return uninitializedHint(p)
	case NodeNotReady:
		if v := p.Cloud; v != nil && v.Found && v.Status != openstack.StatusActive {
			return fmt.Sprintf("The server is %s: start it, or delete it and stackward-ccm removes the Node.", v.Status)
		}
		return fmt.Sprintf("The kubelet stopped posting status: look at the VM and the kubelet's log (journalctl -u kubelet on %s).", p.Node)
	case ServingCSRPending:
		if now.Sub(f.Since) < PendingGrace {
			return "Just requested; stackward-approver decides within seconds."
		}
		s := "Nobody decided this request: check that stackward-approver runs and read its log and the Events on the CSR " +
			"(kubectl describe csr " + f.CSR + "); `stackward-approver explain " + f.CSR + "` runs every check without deciding."
		if v := p.Cloud; v != nil && v.Error != "" {
			s = "The cloud does not answer for this node, and the approver leaves requests pending while it cannot decide: fix the cloud access (" + v.Error + "). " + s
		}
		return s
	case ServingCSRDenied:
		return deniedHint(p, f)
	case ServingCSRNotIssued:
		return "Approved but never signed: kube-controller-manager's csrsigning controller signs kubelet-serving requests; check that it runs with --cluster-signing-cert-file and --cluster-signing-key-file."
	}
	return ""
}

func uninitializedHint(p *NodeProblems) string {
	v := p.Cloud
	switch {
	case v == nil:
		return "Run again with --cloud-config to see what the cloud says; check that stackward-ccm runs and read its log and the Node's Events (kubectl describe node " + p.Node + ")."
	case v.NotFound && p.ProviderID != "":
		return fmt.Sprintf("No server has the ID in providerID %s: the kubelet's --provider-id is wrong, or the VM is gone. Fix --provider-id (stackward-node derives it from the metadata service) or delete the Node.", p.ProviderID)
	case v.NotFound:
		return fmt.Sprintf("No server is named %s and the Node has no providerID, so stackward-ccm cannot find its server. Start the kubelet with --provider-id=openstack:///<server ID> (stackward-node writes it) or name the node as its server.", p.Node)
	case v.Error != "":
		return "The cloud lookup failed (" + v.Error + "); stackward-ccm cannot initialize the node until it succeeds. Check the credentials and endpoints in cloud.conf."
	case v.Status != openstack.StatusActive:
		return fmt.Sprintf("The server is %s; stackward-ccm initializes the node once it is ACTIVE.", v.Status)
	case p.NodeIP != "" && !allOf(p.NodeIP, v):
		return fmt.Sprintf("The kubelet's --node-ip %s is not an address the cloud gives this server (%s), so the node cannot be initialized with it. Set --node-ip to one of the server's addresses (stackward-node picks it from the metadata service) and %s.",
			p.NodeIP, addressList(v), restartKubelet)
	}
	return "The cloud knows this server: check that stackward-ccm runs, and read its log and the Node's Events (kubectl describe node " + p.Node + ")."
}

// allOf reports whether every IP of a (comma-separated) --node-ip is the server's.
func allOf(nodeIP string, v *CloudView) bool {
	for _, ip := range strings.Split(nodeIP, ",") {
		if !v.hasIP(strings.TrimSpace(ip)) {
			return false
		}
	}
	return true
}

func deniedHint(p *NodeProblems, f *Finding) string {
	var s string
	v := p.Cloud
	switch f.Reason {
	case reasonIPNotOfInstance:
		s = "The kubelet asked for an IP the cloud does not give its server"
		if v != nil && v.Found {
			s += " (the cloud reports " + addressList(v) + ")"
		}
		s += ". Set the kubelet's --node-ip to the server's address (stackward-node picks it from the metadata service) and " + restartKubelet + "."
	case reasonDNSNameNotOfInstance, reasonForbiddenDNSName:
		s = "The kubelet asked for a DNS name that is not the node's or its server's. Make --hostname-override (or the host name) the server's name and " + restartKubelet + "."
	case reasonInstanceNotFound, reasonInstanceDeleted:
		s = "The approver found no live server for this node. Start the kubelet with the server's --provider-id (stackward-node writes it) or name the node as its server, and " + restartKubelet + "."
	case reasonInstanceNameMismatch:
		s = "The node's name is not its server's name. Name the node as the server (stackward-node uses the metadata's name) and " + restartKubelet + "."
	case reasonInstanceAmbiguous:
		s = "Several servers have this node's name: give the kubelet --provider-id (stackward-node writes it) so that the server is found by ID, and " + restartKubelet + "."
	case reasonInvalidProviderID:
		s = "The Node's providerID is not an OpenStack one (openstack://<region>/<server ID>). Fix the kubelet's --provider-id; a Node's providerID cannot change, so delete the Node and " + restartKubelet + "."
	default:
		s = "Denied: fix what the reason names and " + restartKubelet + "."
	}
	return s + " The denied request itself can be deleted (kubectl delete csr " + f.CSR + ")."
}

func addressList(v *CloudView) string {
	if len(v.Addresses) == 0 {
		return "no addresses"
	}
	parts := make([]string, 0, len(v.Addresses))
	for _, a := range v.Addresses {
		parts = append(parts, string(a.Type)+" "+a.Address)
	}
	return strings.Join(parts, ", ")
}
